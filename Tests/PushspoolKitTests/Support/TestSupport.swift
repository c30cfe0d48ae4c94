import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Paths into the source tree (tests run from it; fakes and fixtures are not bundled resources).
enum Paths {
    static let testsDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let fakes = testsDir.appendingPathComponent("Fakes")
    static let fixtures = testsDir.appendingPathComponent("Fixtures")
    static let packageRoot = testsDir.deletingLastPathComponent()
    static func fixture(_ name: String) -> URL { fixtures.appendingPathComponent(name) }

    /// The built `pushspool` binary, next to the test bundle (`.build/<config>/`).
    /// `PUSHSPOOL_TEST_BINARY` runs the tests against another build (an earlier commit's, to see a
    /// new test fail there).
    static var binary: URL {
        if let other = ProcessInfo.processInfo.environment["PUSHSPOOL_TEST_BINARY"] { return URL(fileURLWithPath: other) }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("pushspool")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        for config in ["debug", "release"] {
            let candidate = packageRoot.appendingPathComponent(".build/\(config)/pushspool")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return packageRoot.appendingPathComponent(".build/debug/pushspool")
    }

    /// A copy of `binary` that any user may run, for tests that run it as another user (`nobody`):
    /// the checkout, and so `.build/`, may sit where only root can reach it (a clone under /root).
    /// Made once per test process; its libraries come from the toolchain's absolute run path.
    static let binaryForOtherUsers: URL = {
        let dir = URL(fileURLWithPath: "/tmp/pushspool-tests-bin-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        chmod(dir.path, 0o755)
        let copy = dir.appendingPathComponent("pushspool")
        try? FileManager.default.removeItem(at: copy)
        try? FileManager.default.copyItem(at: binary, to: copy)
        chmod(copy.path, 0o755)
        return copy
    }()

    static var nodeAvailable: Bool {
        ["/usr/bin/node", "/usr/local/bin/node"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A fresh temporary directory, removed when the value is dropped.
final class TempDir {
    let url: URL
    init(_ prefix: String = "pushspool-test") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func write(_ name: String, _ text: String, mode: Int = 0o600) {
        let u = url.appendingPathComponent(name)
        try? FileManager.default.createDirectory(at: u.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! text.write(to: u, atomically: true, encoding: .utf8)
        chmod(u.path, mode_t(mode))
    }
    func read(_ name: String) -> String? { try? String(contentsOf: url.appendingPathComponent(name), encoding: .utf8) }
    func list(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path(folder))) ?? []).sorted()
    }
    /// The JSON objects of a JSON Lines file.
    func jsonLines(_ name: String) -> [[String: Any]] {
        (read(name) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

struct RunResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the real `pushspool` binary.
@discardableResult
/// Runs another program (a wrapper such as `script`) the way `runPushspool` runs the binary.
/// Everything readable from `fd` until end of file, read again after a signal interrupts a read
/// (Foundation's `readDataToEndOfFile` traps on EINTR).
func readToEnd(_ fd: Int32) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 { data.append(contentsOf: buffer[0..<n]); continue }
        if n < 0 && errno == EINTR { continue }
        return data
    }
}

func runPushspoolVia(_ executable: String, _ args: [String]) throws -> RunResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = args
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let o = readToEnd(out.fileHandleForReading.fileDescriptor)
    let e = readToEnd(err.fileHandleForReading.fileDescriptor)
    p.waitUntilExit()
    return RunResult(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
}

/// The binary with `args`, run in `cwd`, with this process's environment plus `env`.
/// The test process writes into children's stdin and to servers it stops: a reader that is gone
/// must be an EPIPE for the test to report, never the end of the whole run. (Nothing in the
/// product ignores SIGPIPE for the process as a side effect any more; `run` and `serve` set it.)
private let testProcessIgnoresSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

func pushspoolProcess(_ args: [String], cwd: URL?, env: [String: String]) -> Process {
    _ = testProcessIgnoresSIGPIPE
    let p = Process()
    p.executableURL = Paths.binary
    p.arguments = args
    if let cwd { p.currentDirectoryURL = cwd }
    p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
    return p
}

/// Starts the binary in the background (a dispatcher to signal, kill or wait for); its output
/// is discarded unless `stderr` is given.
func startPushspool(_ args: [String], cwd: URL? = nil, env: [String: String] = [:], stderr: Pipe? = nil) throws -> Process {
    let p = pushspoolProcess(args, cwd: cwd, env: env)
    p.standardOutput = FileHandle.nullDevice
    p.standardError = stderr ?? FileHandle.nullDevice
    try p.run()
    return p
}

/// Starts `pushspool <args>` under strace (its `poll` calls, from its start: no attaching), runs
/// `work` (which leaves it idle), and returns the `poll` calls it made in the `seconds` after.
/// The run is stopped with SIGTERM at the end.
func pollCallsWhenIdle(_ args: [String], cwd: URL? = nil, env: [String: String] = [:], seconds: UInt32 = 3,
                       after work: () throws -> Void) throws -> [Substring] {
    let trace = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-poll-\(UUID().uuidString).trace").path
    defer { unlink(trace) }
    let strace = Process()
    strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
    strace.arguments = ["-f", "-e", "trace=execve,poll,ppoll", "-o", trace, Paths.binary.path] + args
    strace.currentDirectoryURL = cwd
    strace.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
    strace.standardOutput = FileHandle.nullDevice
    strace.standardError = FileHandle.nullDevice
    try strace.run()
    var lines: [Substring] { ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n") }
    defer {
        // The traced run's pid starts the trace's first line (its execve); strace ends with it.
        if let pid = lines.first?.split(separator: " ").first.flatMap({ pid_t($0) }) { kill(pid, SIGTERM) }
        strace.waitUntilExit()
    }
    try work()
    usleep(500_000)
    let before = lines.count
    sleep(seconds)
    return lines.dropFirst(before).filter { $0.contains("poll(") }
}

/// `pushspool init`: what a user runs once before any other command touches a spool.
func initSpool(_ args: [String], cwd: URL? = nil) throws {
    let r = try runPushspool(["init"] + args, cwd: cwd)
    guard r.status == 0 else { throw FakeServer.FakeError(message: "init failed (\(r.status)): \(r.stderr)") }
}

/// A new temporary folder with a spool made by `pushspool init` at its `spool/`, and the
/// `--spool` arguments that name it.
func initializedSpool(_ prefix: String) throws -> (dir: TempDir, spool: [String]) {
    let dir = TempDir(prefix)
    let spool = ["--spool", dir.path("spool")]
    try initSpool(spool)
    return (dir, spool)
}

func runPushspool(_ args: [String], cwd: URL? = nil, env: [String: String] = [:],
                  stdin: String? = nil, timeout: Double = 120) throws -> RunResult {
    let p = pushspoolProcess(args, cwd: cwd, env: env)
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    try p.run()
    if let stdin { inp.fileHandleForWriting.write(Data(stdin.utf8)) }
    try? inp.fileHandleForWriting.close()
    // Drain both pipes concurrently so a chatty child never blocks on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var outData = Data(), errData = Data()
    group.enter(); DispatchQueue.global().async { outData = readToEnd(out.fileHandleForReading.fileDescriptor); group.leave() }
    group.enter(); DispatchQueue.global().async { errData = readToEnd(err.fileHandleForReading.fileDescriptor); group.leave() }
    if group.wait(timeout: .now() + timeout) == .timedOut {
        p.terminate()
        group.wait()
    }
    p.waitUntilExit()
    return RunResult(status: p.terminationStatus,
                     stdout: String(decoding: outData, as: UTF8.self),
                     stderr: String(decoding: errData, as: UTF8.self))
}

/// A fake provider server (Tests/Fakes/<script>.js) running under Node on an ephemeral port.
/// It stops when this value is dropped (and when the test process dies: its stdin closes).
final class FakeServer {
    let process = Process()
    let port: Int
    let stateFile: URL
    private let stdinPipe = Pipe()

    /// `launcher`: what runs node (`NetworkNamespace.exec`: in a network namespace).
    init(_ script: String, args: [String: String] = [:], dir: TempDir, launcher: [String] = []) throws {
        stateFile = dir.url.appendingPathComponent("\(script)-\(UUID().uuidString.prefix(6))-state.json")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var argv = launcher + ["node", Paths.fakes.appendingPathComponent("\(script).js").path, "--state", stateFile.path]
        for (k, v) in args.sorted(by: { $0.key < $1.key }) { argv += ["--\(k)", v] }
        process.arguments = argv
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdinPipe
        try process.run()
        // First stdout line: {"port": N}
        var line = Data()
        let handle = out.fileHandleForReading
        while !line.contains(0x0A) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let obj = try? JSONSerialization.jsonObject(with: line.prefix { $0 != 0x0A }) as? [String: Any],
              let port = obj["port"] as? Int else {
            process.terminate()
            throw FakeError(message: "fake \(script) did not start: \(String(decoding: line, as: UTF8.self))")
        }
        self.port = port
    }

    struct FakeError: Error, CustomStringConvertible { var message: String; var description: String { message } }

    var url: String { "https://127.0.0.1:\(port)" }

    /// The fake's stats, as last written.
    func state() -> [String: Any] {
        guard let data = try? Data(contentsOf: stateFile),
              let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return obj
    }

    private var syncs = 0

    /// The fake's stats written after this call (`sync N` on its stdin; see common.js): everything
    /// the fake had seen when asked is in them, whether or not its own timer has written it yet.
    /// Needs a fake that wrote its state once already.
    func syncedState() -> [String: Any] {
        syncs += 1
        let n = syncs
        try? stdinPipe.fileHandleForWriting.write(contentsOf: Data("sync \(n)\n".utf8))
        var seen: [String: Any] = [:]
        let answered = pollUntil(timeout: 10, poll: 0.01) { seen = state(); return seen["sync"] as? Int == n }
        return answered ? seen : ["unanswered": "sync \(n)", "last file": seen]
    }

    /// Stops the server now (its port is free again once this returns).
    func stop() {
        try? stdinPipe.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { stop() }
}
