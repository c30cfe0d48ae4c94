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
    static let webPushPeer = root.appendingPathComponent("Sources/pushspool-bench/peer-node-webpush.js")
    /// `pushspool`, built next to this binary (`swift run -c release pushspool-bench` builds both).
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pushspool")
    }

    /// `binary`'s path, or why a round cannot run without it.
    static func releaseBinary() throws -> String {
        let path = binary.path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError(description: "no pushspool at \(path): run `swift build -c release` first")
        }
        return path
    }

    /// A round's own scratch folder, `<prefix>-<pid>` under the temporary directory, private to
    /// this user; the caller removes it when the round is over.
    static func scratch(_ prefix: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return dir
    }
}

struct BenchError: Error, CustomStringConvertible { var description: String }

/// A fake provider under Node (by default the fake APNs, without per-token detail: cheap); stops
/// when its stdin closes. It announces its port once ready (the web push fake after writing its
/// subscriptions).
final class BenchFake {
    let process = Process()
    let port: Int
    let stateFile: URL
    private let input = Pipe()

    init(dir: URL, name: String, script: String = "apns.js", arguments: [String] = ["--track-limit", "0"]) throws {
        stateFile = dir.appendingPathComponent("\(name)-state.json")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["node", BenchPaths.fakes.appendingPathComponent(script).path,
                             "--state", stateFile.path] + arguments
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

    /// CPU seconds the fake has used so far.
    var cpuSeconds: Double { processCPUSeconds(process.processIdentifier) }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

struct Measured {
    var status: Int32
    var seconds: Double
    var cpuSeconds: Double
    /// Peak resident set of the child alone, in bytes.
    var peakRSS: Int
    var stdout: String
    var stderr: String
}

/// Runs a child to completion and measures its own wall time, CPU (user + system) and peak RSS
/// (posix_spawn + wait4: Foundation's Process reaps children itself and cannot say this).
/// `stdoutFile`: the child's stdout goes there and is kept (not read back: a listing can be large).
func measure(_ executable: String, _ args: [String], env: [String: String] = [:], stdoutFile: String? = nil) throws -> Measured {
    let dir = FileManager.default.temporaryDirectory
    let outPath = stdoutFile ?? dir.appendingPathComponent("bench-out-\(getpid())-\(UUID().uuidString.prefix(6))").path
    let errPath = dir.appendingPathComponent("bench-err-\(getpid())-\(UUID().uuidString.prefix(6))").path
    defer { if stdoutFile == nil { unlink(outPath) }; unlink(errPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = ([executable] + args).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var environment = ProcessInfo.processInfo.environment
    for (k, v) in env { environment[k] = v }
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for e in envp { free(e) } }
    var pid: pid_t = 0
    let start = DispatchTime.now()
    let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
    guard rc == 0 else { throw BenchError(description: "cannot start \(executable): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    func secs(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    #if os(Linux)
    let rss = Int(usage.ru_maxrss) * 1024   // KiB on Linux
    #else
    let rss = Int(usage.ru_maxrss)          // bytes on macOS
    #endif
    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    return Measured(status: exit, seconds: seconds, cpuSeconds: secs(usage.ru_utime) + secs(usage.ru_stime),
                    peakRSS: rss, stdout: stdoutFile == nil ? read(outPath) : "", stderr: read(errPath))
}

/// The executable's full path from PATH (posix_spawn does not search).
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// What h2load needs to send APNs-shaped pushes: a provider JWT signed by Node's own crypto with
/// the test key (h2load cannot sign), and a file of `count` device URLs on `port` (h2load cycles
/// through it with `-i`, so the server sees as many tokens as the other clients send).
func h2loadAPNsInputs(node: String, key: String, port: Int, count: Int, urls: URL) throws -> String {
    let jwt = try measure(node, ["-e", """
        const c=require('crypto'),fs=require('fs');const b=x=>Buffer.from(x).toString('base64url');
        const i=b(JSON.stringify({alg:'ES256',kid:'TESTKEY123'}))+'.'+b(JSON.stringify({iss:'TEAMID1234',iat:Math.floor(Date.now()/1000)}));
        process.stdout.write(i+'.'+c.sign('sha256',Buffer.from(i),{key:fs.readFileSync('\(key)'),dsaEncoding:'ieee-p1363'}).toString('base64url'));
        """]).stdout
    var list = ""
    for i in 0..<count { list += "https://127.0.0.1:\(port)/3/device/\(String(format: "%064x", i))\n" }
    try list.write(to: urls, atomically: true, encoding: .utf8)
    return jwt
}
