import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The binary running in the background (a dispatcher) with what it prints, its reports (stdout)
/// and log lines (stderr), collected as it prints them: a test waits for the line that says a
/// thing happened (`job news: paused`, `PostgreSQL unreachable`) instead of sleeping for as long
/// as it usually takes. Terminated, if still running, when dropped.
final class BackgroundRun {
    let process: Process
    /// What the reader thread appends to (a class: the thread holds it, not the run).
    private final class Printed: Sendable { let text = Mutex("") }
    private let printed = Printed()

    init(_ args: [String], cwd: URL? = nil, env: [String: String] = [:]) throws {
        let p = pushspoolProcess(args, cwd: cwd, env: env)
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        // Read until every writer has closed the pipe (the process exited), a read interrupted by
        // a signal read again (Foundation's readers trap on EINTR).
        let fd = pipe.fileHandleForReading.fileDescriptor
        let thread = Thread { [printed] in
            var buffer = [UInt8](repeating: 0, count: 1 << 14)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    let text = String(decoding: buffer[0..<n], as: UTF8.self)
                    printed.text.withLock { $0 += text }
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        thread.start()
    }

    /// Everything printed so far.
    var output: String { printed.text.withLock { $0 } }

    /// How many printed lines contain `text`.
    func lines(containing text: String) -> Int {
        output.split(separator: "\n").count { $0.contains(text) }
    }

    /// The last `n` printed lines, for a timed-out wait's message.
    func tail(_ n: Int = 15) -> String { output.split(separator: "\n").suffix(n).joined(separator: "\n") }

    var isRunning: Bool { process.isRunning }
    var processIdentifier: Int32 { process.processIdentifier }
    var terminationStatus: Int32 { process.terminationStatus }
    func terminate() { process.terminate() }
    func waitUntilExit() { process.waitUntilExit() }

    deinit {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
