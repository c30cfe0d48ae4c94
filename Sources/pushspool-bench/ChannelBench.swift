import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One broadcast-channel job (`apns_channel`), from the moment its file is renamed into
/// `incoming/` to the moment nginx's HTTP/2 stand-in has its one `POST /4/broadcasts/apps/…`
/// request (nginx's access log, `$msec`, unbuffered), with `pushspool run` already watching the
/// spool. The channel is made first with `pushspool apns channels create` against the same nginx
/// (which answers 201 with an `apns-channel-id`, as Apple does). The first job pays the TLS
/// handshake and the JWT; the ones after it reuse the connection, as a live dispatcher's do.
struct ChannelRound {
    /// Drop → request arrival, per job, in milliseconds (the first one cold).
    var latencies: [Double]
    /// Broadcast requests nginx saw per job (each must be exactly one).
    var requests: [Int]

    static let channel = "YmVuY2gtY2hhbm5lbA=="

    static func run(jobs: Int) throws -> ChannelRound {
        let dir = try BenchPaths.scratch("pushspool-bench-channel")
        defer { try? FileManager.default.removeItem(at: dir) }
        let setup = try BenchAPNs(dir: dir, devices: 1)
        let log = dir.appendingPathComponent("broadcasts.log")
        let nginx = try Nginx(binary: try Nginx.binary(), dir: dir.appendingPathComponent("nginx-channel"), listenOptions: "ssl http2",
                              http: NginxRound.tls + "\n    log_format arrival '$msec $request_uri $http_apns_channel_id';",
                              server: """
                                  location /4/broadcasts/ { access_log \(log.path) arrival; add_header apns-request-id "bench" always; return 200; }
                                  location /1/apps/ { add_header apns-channel-id "\(channel)" always; return 201; }
                                  """)
        defer { nginx.stop() }
        let spool = dir.appendingPathComponent("spool").path
        let config = dir.appendingPathComponent("channel.json")
        try """
            {"spool": "spool", "routes": {"apns": "apns"},
             "providers": {"apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
                                    "topic": "com.example.app", "environment": "production", "endpoint": "https://127.0.0.1:\(nginx.port)",
                                    "channels_endpoint": "https://127.0.0.1:\(nginx.port)"}},
             "tls": {"ca_file": "\(setup.ca)"}}
            """.write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", spool, "--config", config.path]
        guard try measure(setup.binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let created = try measure(setup.binary, ["apns", "channels", "create"] + common)
        guard created.status == 0, created.stdout.contains(channel) else {
            throw BenchError(description: "apns channels create failed: \(created.stderr)")
        }

        let dispatcher = Process()
        dispatcher.executableURL = URL(fileURLWithPath: setup.binary)
        dispatcher.arguments = ["run"] + common
        dispatcher.standardOutput = FileHandle.nullDevice
        dispatcher.standardError = FileHandle.nullDevice
        try dispatcher.run()
        defer { dispatcher.terminate(); dispatcher.waitUntilExit() }
        usleep(500_000)   // watching the spool

        var latencies: [Double] = [], requests: [Int] = []
        for n in 0..<jobs {
            let before = Self.lines(log).count
            let json = #"{"id":"score-\#(n)","apns_channel":"\#(channel)","pns":"apns","push_type":"liveactivity","#
                + #""live_activity":{"event":"update","content_state":{"score":"\#(n)-0"}}}"#
            let tmp = spool + "/tmp/score-\(n).json"
            try json.write(toFile: tmp, atomically: false, encoding: .utf8)
            var t = timespec()
            clock_gettime(CLOCK_REALTIME, &t)
            let dropped = Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
            guard rename(tmp, spool + "/incoming/score-\(n).json") == 0 else { throw BenchError(description: "cannot drop the job") }
            let deadline = Date().addingTimeInterval(10)
            var arrived: [Substring] = []
            while Date() < deadline {
                arrived = Array(Self.lines(log).dropFirst(before))
                if !arrived.isEmpty { break }
                usleep(1000)
            }
            guard let first = arrived.first, let msec = Double(first.split(separator: " ")[0]) else {
                throw BenchError(description: "job \(n): no broadcast reached nginx in 10 s")
            }
            usleep(200_000)   // a second request, had there been one, would be in by now
            requests.append(Self.lines(log).count - before)
            latencies.append((msec - dropped) * 1000)
        }
        return ChannelRound(latencies: latencies, requests: requests)
    }

    static func lines(_ url: URL) -> [Substring] {
        ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n")
    }

    static func printRows(jobs: Int) throws {
        let r = try run(jobs: jobs)
        let warm = Array(r.latencies.dropFirst())
        let worst = warm.max() ?? 0
        FileHandle.standardError.write(Data("channel: drop → request per job (ms): \(r.latencies.map { String(format: "%.1f", $0) }.joined(separator: ", "))\n".utf8))
        // The median job is the figure: on a loaded machine one job in ten may wait for the CPU
        // or a disk flush (the worst is shown beside it, and every job on stderr).
        row(["nginx, one broadcast-channel job: drop → its request at nginx (ms, connection open; median of \(warm.count) jobs)",
             String(format: "%.1f", median(warm)),
             String(format: "worst %.1f; first job (TLS + JWT) %.1f", worst, r.latencies.first ?? 0),
             "", "≤ 20 ms", median(warm) <= 20 ? "yes" : "no"])
        let one = r.requests.allSatisfy { $0 == 1 }
        row(["requests per broadcast-channel job", one ? "1" : "\(r.requests)", "", "", "1", one ? "yes" : "no"])
    }
}
