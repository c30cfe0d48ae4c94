import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `serve`, the HTTP front door, under wrk (the load generator, on the same two cores), beside
/// nginx answering a fixed 200 (`return 200`, one worker, no access log) in the same run:
/// - `GET /healthz`, against nginx's fixed answer;
/// - `PUT /api/register/{id}` with Basic auth over 64 connections (a registry write each) on
///   SQLite, and on PostgreSQL with `--postgres URI`;
/// - `PUT /api/register/{id}` with a fresh bcrypt cost-10 login on every request (each request
///   another user: no verified-credential cache hit), over 8 connections: where password
///   hashing saturates (no target);
/// - `POST /v1/jobs`: job files made durable (group commit);
/// - resident memory with 1,000 open keep-alive connections, beside nginx's.
struct ServeRound {
    struct Load {
        var rate: Double
        var p99ms: Double
        var errors: Int
    }

    var healthz: Load
    var nginx: Load
    var register: Load
    var freshLogins: Load
    var registerPostgres: Load?
    var jobs: Load
    var jobsGroups: Int?
    var rssServe: Int
    var rssNginx: Int

    /// alice's password `s3cret`, bcrypt cost 5 (`htpasswd -nbB -C 5`).
    static let users = "alice:$2y$05$cc0KuBa52pHdqPUyp9Vw9.pL85fwBYfWSzo75MjmHquwsMWW3IUFq\n"
    static let basic = "Basic " + Data("alice:s3cret".utf8).base64EncodedString()
    static let token = "bench-token"
    /// `s3cret` at bcrypt cost 10, shared by the fresh-login users `u0`… (each user is a cache
    /// key of its own, so every request runs bcrypt once).
    static let cost10 = "$2y$10$QcTy.rC1zDNMMPlPWXpZrOKb4SLCIUtAMKTD3HBXU4KPTilUJXenu"
    static let freshUsers = 20_000

    static func run(seconds: Int, devices: Int, postgres: String?) throws -> ServeRound {
        guard let wrk = which("wrk") else { throw BenchError(description: "wrk is not installed (apt-get install wrk)") }
        let nginxBinary = try Nginx.binary()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-serve-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let nginx = try Nginx(binary: nginxBinary, dir: dir.appendingPathComponent("nginx"))
        defer { nginx.stop() }

        var serve = try Serve(dir: dir.appendingPathComponent("sqlite"), registry: nil, devices: devices)
        let healthz = try wrkRun(wrk, url: "http://127.0.0.1:\(serve.port)/healthz", seconds: seconds, script: nil)
        let fixed = try wrkRun(wrk, url: "http://127.0.0.1:\(nginx.port)/", seconds: seconds, script: nil)
        let register = try wrkRun(wrk, url: "http://127.0.0.1:\(serve.port)", seconds: seconds, script: registerScript(devices: devices, dir: dir))
        let jobs = try wrkRun(wrk, url: "http://127.0.0.1:\(serve.port)", seconds: seconds, script: jobsScript(dir: dir))
        let rssServe = try residentWith(connections: 1000, port: serve.port, pid: serve.pid, path: "/healthz")
        let rssNginx = try residentWith(connections: 1000, port: nginx.port, pid: nginx.workerPID(), path: "/")
        let groups = serve.stop()
        // A serve of its own with the fresh-login users (20,000 htpasswd lines, not counted in the RSS above).
        serve = try Serve(dir: dir.appendingPathComponent("fresh"), registry: nil, devices: 0, freshUsers: freshUsers)
        let fresh = try wrkRun(wrk, url: "http://127.0.0.1:\(serve.port)", seconds: seconds, script: freshLoginScript(dir: dir), connections: 8)
        _ = serve.stop()
        var registerPostgres: Load?
        if let postgres {
            serve = try Serve(dir: dir.appendingPathComponent("postgres"), registry: postgres, devices: devices)
            registerPostgres = try wrkRun(wrk, url: "http://127.0.0.1:\(serve.port)", seconds: seconds, script: registerScript(devices: devices, dir: dir))
            _ = serve.stop()
        }
        return ServeRound(healthz: healthz, nginx: fixed, register: register, freshLogins: fresh, registerPostgres: registerPostgres, jobs: jobs,
                          jobsGroups: groups, rssServe: rssServe, rssNginx: rssNginx)
    }

    static func printRows(seconds: Int, devices: Int, runs: Int, postgres: String?) throws {
        var rounds: [ServeRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("serve run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(seconds: seconds, devices: devices, postgres: postgres))
        }
        let vsNginx = median(rounds.map { $0.healthz.rate / $0.nginx.rate })
        row(["serve: GET /healthz, wrk 2 threads, 64 connections", rate(median(rounds.map { $0.healthz.rate })),
             "nginx return 200: \(rate(median(rounds.map { $0.nginx.rate })))", String(format: "%.2f×", vsNginx), "≥ 0.5× nginx", vsNginx >= 0.5 ? "yes" : "no"])
        let reg = median(rounds.map { $0.register.rate }), p99 = median(rounds.map { $0.register.p99ms })
        row(["serve: PUT /api/register/{id}, Basic auth, SQLite, 64 connections (p99)", "\(rate(reg)) (p99 \(String(format: "%.1f", p99)) ms)",
             "", String(format: "%.2f× nginx's fixed 200", median(rounds.map { $0.register.rate / $0.nginx.rate })),
             "≥ 10000/s, p99 ≤ 50 ms", reg >= 10_000 && p99 <= 50 ? "yes" : "no"])
        if rounds.allSatisfy({ $0.registerPostgres != nil }) {
            let pg = median(rounds.map { $0.registerPostgres!.rate })
            row(["same on PostgreSQL (p99)", "\(rate(pg)) (p99 \(String(format: "%.1f", median(rounds.map { $0.registerPostgres!.p99ms }))) ms)",
                 "", String(format: "%.2f× nginx's fixed 200", median(rounds.map { $0.registerPostgres!.rate / $0.nginx.rate })), "≥ 3000/s", pg >= 3000 ? "yes" : "no"])
        }
        let jobs = median(rounds.map { $0.jobs.rate })
        let groups = rounds.compactMap { $0.jobsGroups }
        row(["serve: POST /v1/jobs, durable (fsync) before 202, 64 connections (p99)",
             "\(rate(jobs)) (p99 \(String(format: "%.1f", median(rounds.map { $0.jobs.p99ms }))) ms)",
             groups.isEmpty ? "" : "fsync groups: \(Int(median(groups.map(Double.init))))",
             String(format: "%.2f× nginx's fixed 200", median(rounds.map { $0.jobs.rate / $0.nginx.rate })), "≥ 2000/s", jobs >= 2000 ? "yes" : "no"])
        let fresh = median(rounds.map { $0.freshLogins.rate })
        row(["serve: PUT /api/register/{id}, a fresh bcrypt cost-10 login each (no cache hits), 8 connections (p99)",
             "\(rate(fresh)) (p99 \(String(format: "%.1f", median(rounds.map { $0.freshLogins.p99ms }))) ms, errors \(rounds.map { $0.freshLogins.errors }.max() ?? 0))",
             "", "", "none (where hashing saturates)", ""])
        let rss = median(rounds.map { Double($0.rssServe) })
        row(["serve RSS with 1000 open connections", mb(rss), "nginx worker " + mb(median(rounds.map { Double($0.rssNginx) })), "",
             "≤ 64 MB", rss <= 64 * 1_048_576 ? "yes" : "no"])
        let errors = rounds.map { $0.healthz.errors + $0.register.errors + $0.jobs.errors + ($0.registerPostgres?.errors ?? 0) }.max() ?? 0
        let worst = { (load: (ServeRound) -> ServeRound.Load?) in rounds.compactMap { load($0)?.errors }.max() ?? 0 }
        row(["non-2xx answers or socket errors (worst run)", "\(errors)",
             "healthz \(worst { $0.healthz }), register \(worst { $0.register }), jobs \(worst { $0.jobs }), PostgreSQL \(worst { $0.registerPostgres })",
             "", "0", errors == 0 ? "yes" : "no"])
    }

    // MARK: - The load

    static func wrkRun(_ wrk: String, url: String, seconds: Int, script: String?, connections: Int = 64) throws -> Load {
        var args = ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency"]
        if let script { args += ["-s", script] }
        let m = try measure(wrk, args + [url])
        guard m.status == 0 else { throw BenchError(description: "wrk failed: \(m.stderr)") }
        func number(after label: String) -> Double? {
            guard let line = m.stdout.split(separator: "\n").first(where: { $0.contains(label) }) else { return nil }
            return line.split(separator: " ").compactMap { Double($0) }.first
        }
        var p99 = Double.nan
        if let line = m.stdout.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("99%") }),
           let value = line.split(separator: " ").last {
            let v = String(value)
            let n = Double(v.filter { "0123456789.".contains($0) }) ?? .nan
            p99 = v.hasSuffix("us") ? n / 1000 : v.hasSuffix("ms") ? n : v.hasSuffix("s") ? n * 1000 : n
        }
        // "Non-2xx or 3xx responses: N" and "Socket errors: connect a, read b, write c, timeout d".
        var errors = Int(number(after: "Non-2xx") ?? 0)
        if let line = m.stdout.split(separator: "\n").first(where: { $0.contains("Socket errors") }) {
            errors += line.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) }.reduce(0, +)
        }
        return Load(rate: number(after: "Requests/sec") ?? 0, p99ms: p99, errors: errors)
    }

    /// Each request re-registers one of alice's devices (a registry write): the tutorial's PUT.
    static func registerScript(devices: Int, dir: URL) throws -> String {
        let path = dir.appendingPathComponent("register.lua").path
        try """
            local n = \(min(devices, 100_000))
            request = function()
              local i = math.random(0, n - 1)
              return wrk.format("PUT", "/api/register/dev-" .. i,
                {["Authorization"] = "\(basic)", ["Content-Type"] = "application/json"},
                '{"Platform":"fcm","Handle":"tok-' .. i .. '","Tags":["follows_bench"]}')
            end
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Each request re-registers the device of another of the users `u0`…, with that user's
    /// Basic credentials: a bcrypt cost-10 check every time.
    static func freshLoginScript(dir: URL) throws -> String {
        let path = dir.appendingPathComponent("fresh.lua").path
        let auths = (0..<freshUsers).map { "\"Basic \(Data("u\($0):s3cret".utf8).base64EncodedString())\"" }.joined(separator: ",\n")
        try """
            local auths = {
            \(auths)
            }
            local counter = 1
            setup = function(thread) thread:set("tid", counter); counter = counter + 1 end
            local n = 0
            request = function()
              n = n + 1
              local i = (n * 2 + tid) % \(freshUsers)
              return wrk.format("PUT", "/api/register/fresh-" .. i,
                {["Authorization"] = auths[i + 1], ["Content-Type"] = "application/json"},
                '{"Platform":"fcm","Handle":"ftok-' .. i .. '","Tags":["follows_bench"]}')
            end
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Each request a new job (its own id): a file written, fsynced and renamed before the 202.
    static func jobsScript(dir: URL) throws -> String {
        let path = dir.appendingPathComponent("jobs.lua").path
        try """
            local counter = 1
            local threads = {}
            setup = function(thread) thread:set("tid", counter); counter = counter + 1 end
            local n = 0
            request = function()
              n = n + 1
              return wrk.format("POST", "/v1/jobs", {["Authorization"] = "Bearer \(token)", ["Content-Type"] = "application/json"},
                '{"id":"bench-' .. tid .. '-' .. n .. '","to_tag":"username:alice","pns":["fcm"],"message":"m"}')
            end
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Opens `connections` keep-alive connections, each answered once, then reads the server's
    /// resident memory while they stay open.
    static func residentWith(connections: Int, port: Int, pid: pid_t, path: String) throws -> Int {
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        for _ in 0..<connections {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = UInt16(port).bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { close(fd); throw BenchError(description: "connect: \(String(cString: strerror(errno)))") }
            fds.append(fd)
            _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        for fd in fds { _ = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
        usleep(200_000)
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    // MARK: - The servers

    /// `pushspool serve` over a fresh spool with alice's devices registered.
    struct Serve {
        let process: Process
        let port: Int
        var pid: pid_t { process.processIdentifier }
        let stderr: Pipe

        /// `freshUsers`: users `u0`… (password `s3cret`, bcrypt cost 10), each with a device `fresh-N`.
        init(dir: URL, registry: String?, devices: Int, freshUsers: Int = 0) throws {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let fm = FileManager.default
            let fresh = (0..<freshUsers).map { "u\($0):\(ServeRound.cost10)\n" }.joined()
            _ = fm.createFile(atPath: dir.appendingPathComponent("users.htpasswd").path, contents: Data((ServeRound.users + fresh).utf8),
                              attributes: [.posixPermissions: 0o600])
            let digest = try measure("/bin/sh", ["-c", "printf '%s' \(ServeRound.token) | sha256sum | cut -d' ' -f1"]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            fm.createFile(atPath: dir.appendingPathComponent("tokens.txt").path, contents: Data("bench \(digest)\n".utf8), attributes: [.posixPermissions: 0o600])
            let registryKey = registry.map { #""registry": "\#($0)", "# } ?? ""
            // Every benchmark connection comes from 127.0.0.1 (1,000 for the RSS figure): no per-address limit.
            let config = #"{"spool": "spool", \#(registryKey)"http": {"listen": "127.0.0.1:0", "users_file": "users.htpasswd", "tokens_file": "tokens.txt", "client_tag_prefixes": ["follows_"], "rate_limit_per_minute": 1000000, "max_connections_per_address": 0}}"#
            try config.write(to: dir.appendingPathComponent("pushspool.json"), atomically: true, encoding: .utf8)
            let cfg = dir.appendingPathComponent("pushspool.json").path
            let bin = BenchPaths.binary.path
            guard try measure(bin, ["init", "--config", cfg]).status == 0 else { throw BenchError(description: "init failed") }
            // alice's devices (ids dev-N), to be re-registered by the PUTs.
            let lines = (0..<min(devices, 100_000)).map { #"{"id":"dev-\#($0)","platform":"fcm","handle":"tok-\#($0)","tags":["username:alice"]}"# }
                + (0..<freshUsers).map { #"{"id":"fresh-\#($0)","platform":"fcm","handle":"ftok-\#($0)","tags":["username:u\#($0)"]}"# }
            let file = dir.appendingPathComponent("devices.jsonl")
            try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            let imported = try measure(bin, ["import", file.path, "--config", cfg])
            guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
            try self.init(dir: dir, config: cfg)
        }

        /// `pushspool serve --config config` started in `dir`, once it says where it listens.
        init(dir: URL, config cfg: String) throws {
            process = Process()
            process.executableURL = BenchPaths.binary
            process.arguments = ["serve", "--config", cfg]
            process.currentDirectoryURL = dir
            stderr = Pipe()
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            var text = "", found: Int?
            let fd = stderr.fileHandleForReading.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 4096)
            while found == nil {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                text += String(decoding: buffer[0..<n], as: UTF8.self)
                if let r = text.range(of: #"serving http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                    found = Int(text[r].split(separator: ":").last ?? "")
                }
            }
            guard let found else { throw BenchError(description: "serve did not start: \(text)") }
            port = found
            // The access log (a line per request) goes on being read and dropped.
            Thread.detachNewThread { [stderr] in
                let fd = stderr.fileHandleForReading.fileDescriptor
                var sink = [UInt8](repeating: 0, count: 1 << 16)
                var tail = ""
                while true {
                    let n = sink.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n <= 0 { break }
                    tail = String((tail + String(decoding: sink[0..<n], as: UTF8.self)).suffix(4096))
                    if let r = tail.range(of: #"in [0-9]+ fsync groups"#, options: .regularExpression) { ServeRound.lastGroups.set(tail[r]) }
                }
            }
        }

        /// SIGTERM; the number of fsync groups serve reports on its way out.
        func stop() -> Int? {
            process.terminate()
            process.waitUntilExit()
            usleep(100_000)
            return ServeRound.lastGroups.take().flatMap { Int($0.split(separator: " ")[1]) }
        }
    }

    static let lastGroups = LockedString()
}

final class LockedString: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ s: Substring) { lock.lock(); value = String(s); lock.unlock() }
    func take() -> String? { lock.lock(); defer { value = nil; lock.unlock() }; return value }
}
