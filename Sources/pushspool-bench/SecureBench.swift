import Foundation
import PushspoolCore
import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Secure push and receipts (README "Secure push and receipts"), each figure beside its peer:
/// - a secure broadcast through the sandbox to N devices (APNs, FCM and WNS: an id derived per
///   device, the text stored once) against the same broadcast plain, on the same spool, in the same
///   round (`run --once`'s whole process; odd rounds measure the secure one first);
/// - `serve` answering the tutorial's `GET /api/notifications/{id}` under wrk (one user's Basic
///   credentials, so after the first request every check is a cache hit), ids of a secure job to
///   that user's `--fetch-devices` devices (default 100,000) cycled: first each id's first fetch
///   (a write: fetched and received), then a second pass from the first id again (ids the first
///   pass fetched are a read; past them, first fetches again);
/// - `POST /v1/events` (bearer) in batches of 1,000 (`received`, `opened` and `dismissed` of those
///   ids in turn: each event new until every (id, type) was reported, then duplicates);
/// - `serve`'s peak RSS over all of it (`VmHWM`, the kernel's high-water mark of the process).
struct SecureRound {
    var plain: Measured
    var secure: Measured

    /// `round`: odd rounds measure the secure broadcast first (the machine's load drifts).
    static func run(devices: Int, round: Int) throws -> SecureRound {
        let dir = try BenchPaths.scratch("pushspool-bench-secure")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = try BenchPaths.releaseBinary()
        let file = dir.appendingPathComponent("devices.jsonl")
        try BenchDevices(count: devices, langEvery: Int.max).write(.jsonl, to: file)
        let spool = dir.appendingPathComponent("spool").path
        let common = ["--spool", spool]
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        // One unmeasured broadcast first: both measured runs find the registry's pages warm.
        _ = try broadcast(binary, spool: spool, id: "warm", secure: false, count: devices)
        let early = round % 2 == 1 ? try broadcast(binary, spool: spool, id: "secure", secure: true, count: devices) : nil
        let plain = try broadcast(binary, spool: spool, id: "plain", secure: false, count: devices)
        let secure = try early ?? broadcast(binary, spool: spool, id: "secure", secure: true, count: devices)
        return SecureRound(plain: plain, secure: secure)
    }

    /// `options`: how `run` finds the spool (default `--spool spool`).
    static func broadcast(_ binary: String, spool: String, id: String, secure: Bool, count: Int, options: [String]? = nil) throws -> Measured {
        try BenchJob.drop(#"{"id": "\#(id)", "broadcast": true, "pns": ["apns", "fcm", "wns"], "message": "hello", "secure": \#(secure)}"#,
                          spool: spool)
        let sent = try measure(binary, ["run", "--once"] + (options ?? ["--spool", spool]))
        guard sent.status == 0, sent.stdout.contains("job \(id): done — delivered \(count), failed 0, unregistered 0, retries") else {
            throw BenchError(description: "broadcast \(id) failed (\(sent.status)): \(sent.stdout.suffix(300)) \(sent.stderr.suffix(300))")
        }
        return sent
    }

    /// `pushspool-bench secure`: R rounds of the broadcasts, then one serve under load.
    static func printRows(devices: Int, fetchDevices: Int, seconds: Int, runs: Int) throws {
        var rounds: [SecureRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("secure run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(devices: devices, round: i))
        }
        func secs(_ x: Double) -> String { String(format: "%.2f s", x) }
        let ratio = median(rounds.map { $0.secure.seconds / $0.plain.seconds })
        row(["secure sandbox broadcast, \(devices) devices (APNs, FCM, WNS): run --once", secs(median(rounds.map(\.secure.seconds))),
             "plain " + secs(median(rounds.map(\.plain.seconds))), String(format: "%.2f×", ratio), "≤ 1.1× plain", ratio <= 1.1 ? "yes" : "no"])
        let cpu = median(rounds.map { $0.secure.cpuSeconds / $0.plain.cpuSeconds })
        row(["same broadcast, CPU (whole process)", secs(median(rounds.map(\.secure.cpuSeconds))),
             "plain " + secs(median(rounds.map(\.plain.cpuSeconds))), String(format: "%.2f×", cpu), "", ""])
        row(["same broadcast, peak RSS", mb(median(rounds.map { Double($0.secure.peakRSS) })),
             "plain " + mb(median(rounds.map { Double($0.plain.peakRSS) })), "", "", ""])
        FileHandle.standardError.write(Data("secure: serve under wrk…\n".utf8))
        try ReceiptsServe.printRows(devices: fetchDevices, seconds: seconds)
    }
}

/// `serve` answering fetches and events of one secure job sent to one user's devices.
enum ReceiptsServe {
    static func printRows(devices: Int, seconds: Int) throws {
        guard let wrk = which("wrk") else { throw BenchError(description: "wrk is not installed (apt-get install wrk)") }
        let dir = try BenchPaths.scratch("pushspool-bench-receipts")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = try BenchPaths.releaseBinary()
        let cfg = try configure(dir: dir)
        // alice's devices, one secure job to all of them through the sandbox.
        let file = dir.appendingPathComponent("devices.jsonl")
        try BenchJob.writeDevices(devices, to: file) { _ in "" }
        try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: #""tags":["bench"]"#, with: #""tags":["username:alice"]"#)
            .write(to: file, atomically: true, encoding: .utf8)
        let imported = try measure(binary, ["import", file.path, "--config", cfg])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        let spool = dir.appendingPathComponent("spool").path
        _ = try SecureRound.broadcast(binary, spool: spool, id: "secure", secure: true, count: devices, options: ["--config", cfg])
        let ids = try self.ids(registry: spool + "/registry.sqlite", job: "secure")
        guard ids.count == devices else { throw BenchError(description: "\(ids.count) ids for \(devices) devices") }
        let scripts = try Scripts(dir: dir, ids: ids)

        let serve = try ServeRound.Serve(dir: dir, config: cfg)
        defer { _ = serve.stop() }
        let url = "http://127.0.0.1:\(serve.port)"
        // One request first: alice's bcrypt check is then cached, as it is for an app's user.
        _ = try ServeRound.wrkRun(wrk, url: url + "/healthz", seconds: 1, script: nil, connections: 2)
        let firstFetch = try ServeRound.wrkRun(wrk, url: url, seconds: seconds, script: scripts.fetch, connections: 16)
        let refetch = try ServeRound.wrkRun(wrk, url: url, seconds: seconds, script: scripts.fetch, connections: 16)
        let events = try ServeRound.wrkRun(wrk, url: url, seconds: seconds, script: scripts.events, connections: 8)
        let peak = highWaterMark(pid: serve.pid)

        let fetched = Int(firstFetch.rate * Double(seconds))
        row(["serve: GET /api/notifications/{id} (tutorial, Basic, cached credential), 16 connections: an id's first fetch (p99)",
             "\(rate(firstFetch.rate)) (p99 \(String(format: "%.1f", firstFetch.p99ms)) ms)",
             "\(min(fetched, devices)) of \(devices) ids fetched", "", "≥ 5000/s", firstFetch.rate >= 5000 ? "yes" : "no"])
        row(["same, a second pass from the first id again (ids the first pass fetched: Read true, no write) (p99)", "\(rate(refetch.rate)) (p99 \(String(format: "%.1f", refetch.p99ms)) ms)",
             "", "", "≥ 5000/s", refetch.rate >= 5000 ? "yes" : "no"])
        let perSecond = events.rate * Double(NotificationEvent.maxBatch)
        row(["serve: POST /v1/events, batches of 1000 (bearer), 8 connections (p99 per batch)",
             "\(rate(perSecond)) events (p99 \(String(format: "%.1f", events.p99ms)) ms)",
             "\(String(format: "%.1f", events.rate)) batches/s", "", "≥ 20000/s", perSecond >= 20_000 ? "yes" : "no"])
        row(["serve peak RSS (VmHWM) over all of the above", mb(Double(peak)), "", "", "≤ 64 MB", peak > 0 && peak <= 64 << 20 ? "yes" : "no"])
        let errors = firstFetch.errors + refetch.errors + events.errors
        row(["non-2xx answers or socket errors", "\(errors)", "fetch \(firstFetch.errors), refetch \(refetch.errors), events \(events.errors)",
             "", "0", errors == 0 ? "yes" : "no"])
    }

    /// A config with alice (bcrypt cost 5) and the bench's token, serve on a free port.
    static func configure(dir: URL) throws -> String {
        let fm = FileManager.default
        fm.createFile(atPath: dir.appendingPathComponent("users.htpasswd").path, contents: Data(ServeRound.users.utf8),
                      attributes: [.posixPermissions: 0o600])
        let digest = try measure("/bin/sh", ["-c", "printf '%s' \(ServeRound.token) | sha256sum | cut -d' ' -f1"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        fm.createFile(atPath: dir.appendingPathComponent("tokens.txt").path, contents: Data("bench \(digest)\n".utf8),
                      attributes: [.posixPermissions: 0o600])
        let config = #"{"spool": "spool", "http": {"listen": "127.0.0.1:0", "users_file": "users.htpasswd", "tokens_file": "tokens.txt", "rate_limit_per_minute": 1000000, "max_connections_per_address": 0}}"#
        let path = dir.appendingPathComponent("pushspool.json").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        guard try measure(BenchPaths.binary.path, ["init", "--config", path]).status == 0 else { throw BenchError(description: "init failed") }
        return path
    }

    /// Every id job `job` sent, derived as the sender derived them: the registry's key, the
    /// job's number, each device's key and installation id.
    static func ids(registry path: String, job: String) throws -> [String] {
        let registry = try SQLiteRegistry(path: path)
        defer { registry.close() }
        guard let tracked = try registry.trackedJob(id: job) else { throw BenchError(description: "job \(job) is not tracked") }
        let mac = NotificationMAC(key: try registry.notificationKey())
        var ids: [String] = []
        try registry.forEach(platforms: Set(Platform.allCases), matching: nil, after: 0) { device, key in
            ids.append(mac.id(job: tracked.number, device: key, platform: device.platform, installationID: device.id).text)
            return true
        }
        return ids
    }

    /// The kernel's high-water mark of the process's resident set.
    static func highWaterMark(pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// wrk's Lua: the ids in a file of their own, read by each thread; each thread takes every
    /// other id (thread 1 the odd, thread 2 the even), so a pass fetches each id once.
    struct Scripts {
        var fetch: String
        var events: String

        init(dir: URL, ids: [String]) throws {
            let list = dir.appendingPathComponent("ids.txt").path
            try (ids.joined(separator: "\n") + "\n").write(toFile: list, atomically: true, encoding: .utf8)
            let load = """
                local ids = {}
                for line in io.lines("\(list)") do ids[#ids + 1] = line end
                local counter = 1
                setup = function(thread) thread:set("tid", counter); counter = counter + 1 end
                local n = 0
                """
            fetch = dir.appendingPathComponent("fetch.lua").path
            try """
                \(load)
                request = function()
                  local i = (n * 2 + tid - 1) % #ids
                  n = n + 1
                  return wrk.format("GET", "/api/notifications/" .. ids[i + 1], {["Authorization"] = "\(ServeRound.basic)"})
                end
                """.write(toFile: fetch, atomically: true, encoding: .utf8)
            // Batch b of a thread: 1,000 consecutive ids from its own share, one type per pass.
            events = dir.appendingPathComponent("events.lua").path
            try """
                \(load)
                local types = {"received", "opened", "dismissed"}
                request = function()
                  local start = (n * 2 + tid - 1) * 1000
                  local kind = types[(math.floor(start / #ids) % 3) + 1]
                  n = n + 1
                  local items = {}
                  for k = 0, 999 do
                    items[k + 1] = '{"id":"' .. ids[((start + k) % #ids) + 1] .. '","type":"' .. kind .. '"}'
                  end
                  return wrk.format("POST", "/v1/events", {["Authorization"] = "Bearer \(ServeRound.token)", ["Content-Type"] = "application/json"},
                    "[" .. table.concat(items, ",") .. "]")
                end
                """.write(toFile: events, atomically: true, encoding: .utf8)
        }
    }
}
