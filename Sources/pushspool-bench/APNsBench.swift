import Foundation
import PushspoolKit

/// One round of the APNs comparison: the same N notifications to a fresh instance of the same
/// fake APNs, sent by `pushspool run --once` (the whole pipeline: process start, registry scan,
/// JWT, HTTP/2, result log, with the metrics file, JSON log events and the control watch on), by
/// Node's own http2 client (one session, the same streams in flight), by h2load (nghttp2's load
/// generator: the fake's ceiling, no work besides HTTP/2) and, with `--baseline`, by an earlier
/// pushspool binary with none of the observing switched on (`--unobserved`: pushspool neither).
struct APNsRound {
    /// A sender's figures, and how many distinct JWTs the fake verified for it.
    @dynamicMemberLookup
    struct Client {
        var figures: SenderFigures
        var jwts: Int
        subscript<T>(dynamicMember path: KeyPath<SenderFigures, T>) -> T { figures[keyPath: path] }

        init(_ m: Measured, count: Int, rate: Double? = nil, fake state: [String: Any], fakeMicros: Double, jwts: Int? = nil) {
            figures = SenderFigures(m, count: count, rate: rate, fake: state, fakeMicros: fakeMicros,
                                    deliveredKey: "tokensDelivered", duplicatesKey: "duplicateDeliveries")
            self.jwts = jwts ?? state["jwts"] as? Int ?? -1
        }
    }
    var pushspool: Client
    var node: Client
    var h2load: Client?
    /// `--baseline BINARY`: an earlier pushspool, run the same way against a fresh fake.
    var baseline: Client?

    static let payload = #"{"aps":{"alert":"From bench: hello"}}"#

    /// `observed` false runs pushspool exactly as the baseline (nothing switched on for
    /// operators), so the two differ only by their code.
    static func run(count: Int, concurrency: Int, baseline: String? = nil, observed: Bool = true) throws -> APNsRound {
        let dir = try BenchPaths.scratch("pushspool-bench")
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = dir.appendingPathComponent("AuthKey_TESTKEY123.p8")
        try FileManager.default.copyItem(at: BenchPaths.fixtures.appendingPathComponent("AuthKey_TESTKEY123.p8"), to: key)
        chmod(key.path, 0o600)
        let ca = BenchPaths.fixtures.appendingPathComponent("ca.pem").path
        let binary = try BenchPaths.releaseBinary()
        guard let node = which("node") else { throw BenchError(description: "node is not on PATH") }

        var devices = ""
        for i in 0..<count { devices += #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["bench"]}"# + "\n" }
        let devicesFile = dir.appendingPathComponent("devices.jsonl")
        try devices.write(to: devicesFile, atomically: true, encoding: .utf8)

        /// One `pushspool run --once` of the campaign with `binary` on a fresh spool and fake.
        /// `observed`: with everything an operator watches switched on (metrics file every
        /// second, JSON log events, a pending pause request for another job).
        func pushspoolRun(_ binary: String, name: String, observed: Bool) throws -> (Measured, [String: Any], Double) {
            let fake = try BenchFake(dir: dir, name: "fake-\(name)")
            defer { fake.stop() }
            let config = dir.appendingPathComponent("\(name).json")
            let spool = dir.appendingPathComponent("spool-\(name)").path
            let metrics = observed ? #", "metrics": {"textfile": "spool-\#(name)/pushspool.prom", "interval_seconds": 1}"# : ""
            try """
            {"spool": "spool-\(name)", "concurrency": \(concurrency), "routes": {"apns": "apns"},
             "providers": {"apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
                                    "topic": "com.example.app", "environment": "production", "endpoint": "https://127.0.0.1:\(fake.port)"}},
             "tls": {"ca_file": "\(ca)"}\(metrics)}
            """.write(to: config, atomically: true, encoding: .utf8)
            let common = ["--spool", spool, "--config", config.path]
            guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
            let imported = try measure(binary, ["import"] + common + [devicesFile.path])
            guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
            let submitted = try measure(binary, ["submit"] + common + ["--to-tag", "bench", "--pns", "apns", "--message", "hello", "--from", "bench", "--id", "bench"])
            guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
            if observed {
                try #"{"request":"pause","id":"another-job"}"#.write(toFile: spool + "/control/another-job.pause", atomically: true, encoding: .utf8)
            }
            let fakeCPU0 = fake.cpuSeconds
            let run = try measure(binary, ["run", "--once"] + common + (observed ? ["--log-format", "json"] : []))
            let state = fake.settledState(expecting: count)
            let fakeCPU = (fake.cpuSeconds - fakeCPU0) / Double(count) * 1e6
            guard run.status == 0 else { throw BenchError(description: "\(name) run failed (\(run.status)): \(run.stderr)") }
            return (run, state, fakeCPU)
        }
        let (ours, ourState, ourFake) = try pushspoolRun(binary, name: "pushspool", observed: observed)
        let earlier = try baseline.map { try pushspoolRun($0, name: "baseline", observed: false) }

        // Node's http2 client, same fake code, fresh instance
        let peerFake = try BenchFake(dir: dir, name: "fake-node")
        let peerFakeCPU0 = peerFake.cpuSeconds
        let peer = try measure(node, [BenchPaths.peer.path, "--port", String(peerFake.port),
                                      "--count", String(count), "--concurrency", String(concurrency),
                                      "--ca", ca, "--key", key.path, "--team-id", "TEAMID1234", "--key-id", "TESTKEY123",
                                      "--topic", "com.example.app", "--payload", payload])
        let peerState = peerFake.settledState(expecting: count)
        let peerFakeCPU = (peerFake.cpuSeconds - peerFakeCPU0) / Double(count) * 1e6
        peerFake.stop()
        let peerResult = (try? JSONSerialization.jsonObject(with: Data(peer.stdout.utf8)) as? [String: Any]) ?? [:]
        if (peerResult["failed"] as? Int ?? 0) > 0 { print("  (node peer reported \(peerResult["failed"]!) failures)") }

        // h2load: the fake's ceiling (nghttp2's load generator does nothing but HTTP/2)
        var ceiling: Client?
        if let h2load = which("h2load") {
            let h2Fake = try BenchFake(dir: dir, name: "fake-h2load")
            let body = dir.appendingPathComponent("payload.json")
            try payload.write(to: body, atomically: true, encoding: .utf8)
            // The same N device URLs (h2load cycles through an input file), so the fake does the
            // same per-token work as for the two clients; h2load cannot vary apns-id per request.
            let urls = dir.appendingPathComponent("urls.txt")
            let jwt = try h2loadAPNsInputs(node: node, key: key.path, port: h2Fake.port, count: count, urls: urls)
            let h2FakeCPU0 = h2Fake.cpuSeconds
            let h = try measure(h2load, ["-n", String(count), "-c", "1", "-m", String(concurrency), "-d", body.path,
                                         "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: com.example.app",
                                         "-H", "apns-push-type: alert", "-H", "apns-priority: 10", "-H", "content-type: application/json",
                                         "-i", urls.path])
            let h2State = h2Fake.settledState(expecting: count)
            let h2FakeCPU = (h2Fake.cpuSeconds - h2FakeCPU0) / Double(count) * 1e6
            h2Fake.stop()
            // "finished in 2.10s, 14285.71 req/s, …"
            if let line = h.stdout.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
               let rateField = line.split(separator: ",").dropFirst().first,
               let rate = Double(rateField.trimmingCharacters(in: .whitespaces).split(separator: " ")[0]) {
                ceiling = Client(h, count: count, rate: rate, fake: h2State, fakeMicros: h2FakeCPU, jwts: 1)
            }
        }
        return APNsRound(pushspool: Client(ours, count: count, fake: ourState, fakeMicros: ourFake),
                         node: Client(peer, count: count, fake: peerState, fakeMicros: peerFakeCPU), h2load: ceiling,
                         baseline: earlier.map { Client($0.0, count: count, fake: $0.1, fakeMicros: $0.2) })
    }
}
