import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Paths into the source tree: the bench runs from a checkout (fakes and fixtures are not bundled).
enum BenchPaths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let fakes = root.appendingPathComponent("Tests/Fakes")
    static let fixtures = root.appendingPathComponent("Tests/Fixtures")
    static let peer = root.appendingPathComponent("Sources/pushspool-bench/peer-node-client.js")
    /// `pushspool`, built next to this binary (`swift run -c release pushspool-bench` builds both).
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pushspool")
    }
}

struct BenchError: Error, CustomStringConvertible { var description: String }

/// The fake APNs under Node; stops when its stdin closes.
final class BenchFake {
    let process = Process()
    let port: Int
    let stateFile: URL
    private let input = Pipe()

    init(dir: URL, name: String) throws {
        stateFile = dir.appendingPathComponent("\(name)-state.json")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["node", BenchPaths.fakes.appendingPathComponent("apns.js").path,
                             "--state", stateFile.path, "--track-limit", "0"]
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = input
        try process.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let obj = try? JSONSerialization.jsonObject(with: line.prefix { $0 != 0x0A }) as? [String: Any],
              let port = obj["port"] as? Int else { throw BenchError(description: "the fake did not start") }
        self.port = port
    }

    /// Stats once every session has closed (the fake flushes then).
    func settledState(expecting answered: Int) -> [String: Any] {
        var state: [String: Any] = [:]
        for _ in 0..<200 {
            if let d = try? Data(contentsOf: stateFile),
               let s = try? JSONSerialization.jsonObject(with: d) as? [String: Any] {
                state = s
                if s["openSessions"] as? Int == 0, (s["answered"] as? Int ?? 0) >= answered { break }
            }
            usleep(50_000)
        }
        return state
    }

    /// CPU seconds the fake has used so far (user + system, from /proc).
    var cpuSeconds: Double {
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
        #else
        return 0
        #endif
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

struct Measured {
    var status: Int32
    var seconds: Double
    var cpuSeconds: Double
    var stdout: String
    var stderr: String
}

/// Runs a child to completion and measures its wall time and CPU (user + system).
#if os(Linux)
private let children = RUSAGE_CHILDREN.rawValue
#else
private let children = RUSAGE_CHILDREN
#endif

func measure(_ executable: String, _ args: [String]) throws -> Measured {
    var before = rusage()
    getrusage(children, &before)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = args
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    let start = DispatchTime.now()
    try p.run()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    var after = rusage()
    getrusage(children, &after)
    func secs(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    let cpu = secs(after.ru_utime) - secs(before.ru_utime) + secs(after.ru_stime) - secs(before.ru_stime)
    return Measured(status: p.terminationStatus, seconds: seconds, cpuSeconds: cpu,
                    stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
}
