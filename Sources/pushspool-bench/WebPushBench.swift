import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One round of the Web Push comparison: N subscriptions on a fresh instance of the fake push
/// service (Tests/Fakes/webpush.js, which verifies VAPID and decrypts every body with the
/// subscriptions' private keys), sent by `pushspool run --once` (the whole pipeline: process start,
/// registry scan, RFC 8291 encryption per subscription, VAPID, HTTP/2, result log), then by Node's
/// own crypto and http2 client (`peer-node-webpush.js`: the same encryption and headers, one
/// session, the same streams in flight) against another fresh instance of the same fake.
struct WebPushRound {
    /// A sender's figures, and what the fake decrypted for the first subscriptions (the same text
    /// for both clients) and found wrong.
    @dynamicMemberLookup
    struct Client {
        var figures: SenderFigures
        var plaintexts: Set<String>
        var problems: [String]
        subscript<T>(dynamicMember path: KeyPath<SenderFigures, T>) -> T { figures[keyPath: path] }

        init(_ m: Measured, count: Int, fake state: [String: Any], fakeMicros: Double) {
            figures = SenderFigures(m, count: count, fake: state, fakeMicros: fakeMicros, deliveredKey: "delivered", duplicatesKey: "duplicates")
            plaintexts = Set((state["plaintexts"] as? [String: Any] ?? [:]).values.flatMap { $0 as? [String] ?? [] })
            problems = state["problems"] as? [String] ?? []
        }
    }
    var pushspool: Client
    var node: Client

    static let subject = "mailto:ops@example.com"
    /// What `pushspool` renders for `--from bench --message hello` on the web platform.
    static let plaintext = #"{"body":"From bench: hello"}"#
    /// The fake in its benchmark mode: per-subscription detail for 100 only, the state file every
    /// 100 ms and when a connection closes, each distinct VAPID token's signature verified once.
    /// Every request's headers, size, exp and body are still checked, every body decrypted.
    static let fakeArguments = ["--track-limit", "100", "--flush-ms", "100", "--verify-once"]

    static func run(count: Int, concurrency: Int) throws -> WebPushRound {
        let dir = try BenchPaths.scratch("pushspool-bench-web")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ca = BenchPaths.fixtures.appendingPathComponent("ca.pem").path
        let binary = try BenchPaths.releaseBinary()
        guard let node = which("node") else { throw BenchError(description: "node is not on PATH") }
        let vapid = dir.appendingPathComponent("vapid.pem").path
        let keygen = try measure(binary, ["webpush", "keygen", "--out", vapid])
        guard keygen.status == 0 else { throw BenchError(description: "webpush keygen failed: \(keygen.stderr)") }

        // pushspool
        let subs = dir.appendingPathComponent("subscriptions-pushspool.jsonl").path
        let fake = try BenchFake(dir: dir, name: "webpush-pushspool", script: "webpush.js",
                                 arguments: ["--subscriptions", String(count), "--out", subs] + fakeArguments)
        let config = dir.appendingPathComponent("pushspool.json")
        let spool = dir.appendingPathComponent("spool").path
        try """
        {"spool": "spool", "concurrency": \(concurrency), "routes": {"web": "webpush"},
         "providers": {"webpush": {"vapid_private_key_file": "\(vapid)", "subject": "\(subject)", "allowed_hosts": ["127.0.0.1"]}},
         "tls": {"ca_file": "\(ca)"}}
        """.write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", spool, "--config", config.path]
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [subs])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        let submitted = try measure(binary, ["submit"] + common + ["--to-tag", "campaign", "--pns", "web", "--message", "hello",
                                                                   "--from", "bench", "--id", "bench"])
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let fakeCPU0 = fake.cpuSeconds
        let ours = try measure(binary, ["run", "--once"] + common)
        let ourState = fake.settledState(expecting: count)
        let ourFake = (fake.cpuSeconds - fakeCPU0) / Double(count) * 1e6
        fake.stop()
        guard ours.status == 0 else { throw BenchError(description: "pushspool run failed (\(ours.status)): \(ours.stderr)") }

        // Node's crypto + http2 client, same fake code, fresh instance (its own subscriptions file)
        let peerSubs = dir.appendingPathComponent("subscriptions-node.jsonl").path
        let peerFake = try BenchFake(dir: dir, name: "webpush-node", script: "webpush.js",
                                     arguments: ["--subscriptions", String(count), "--out", peerSubs] + fakeArguments)
        let peerFakeCPU0 = peerFake.cpuSeconds
        let peer = try measure(node, [BenchPaths.webPushPeer.path, "--subscriptions", peerSubs, "--vapid-key", vapid,
                                      "--subject", subject, "--ca", ca, "--concurrency", String(concurrency),
                                      "--payload", plaintext, "--ttl", "2419200", "--urgency", "normal"])
        let peerState = peerFake.settledState(expecting: count)
        let peerFakeCPU = (peerFake.cpuSeconds - peerFakeCPU0) / Double(count) * 1e6
        peerFake.stop()
        guard peer.status == 0 else { throw BenchError(description: "node peer failed (\(peer.status)): \(peer.stderr)") }
        let peerResult = (try? JSONSerialization.jsonObject(with: Data(peer.stdout.utf8)) as? [String: Any]) ?? [:]
        if (peerResult["failed"] as? Int ?? 0) > 0 { print("  (node peer reported \(peerResult["failed"]!) failures: \(peerResult["byStatus"] ?? ""))") }

        return WebPushRound(pushspool: Client(ours, count: count, fake: ourState, fakeMicros: ourFake),
                            node: Client(peer, count: count, fake: peerState, fakeMicros: peerFakeCPU))
    }

    /// Runs the rounds and prints the table rows.
    static func printRows(count: Int, concurrency: Int, runs: Int) throws {
        var rounds: [WebPushRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("webpush run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(count: count, concurrency: concurrency))
        }
        for r in rounds {
            for (who, c) in [("pushspool", r.pushspool), ("node", r.node)] where !c.problems.isEmpty || c.plaintexts != [plaintext] {
                print("  (the fake, for \(who): decrypted \(c.plaintexts.sorted()), problems \(c.problems.prefix(3)))")
            }
        }
        let ours = median(rounds.map { $0.pushspool.rate })
        let node = median(rounds.map { $0.node.rate })
        let vsNode = median(rounds.map { $0.pushspool.rate / $0.node.rate })
        row(["Web Push, \(count) subscriptions, \(concurrency) streams: rate", rate(ours), "node crypto + http2 \(rate(node))",
             String(format: "%.2f×", vsNode), "", ""])
        let ourCPU = median(rounds.map { $0.pushspool.cpuMicrosPerRequest })
        let nodeCPU = median(rounds.map { $0.node.cpuMicrosPerRequest })
        let cpuRatio = median(rounds.map { $0.pushspool.cpuMicrosPerRequest / $0.node.cpuMicrosPerRequest })
        row(["CPU per notification (whole process)", String(format: "%.1f µs", ourCPU), String(format: "node %.1f µs", nodeCPU),
             String(format: "%.2f×", cpuRatio), "", ""])
        row(["the fake's own CPU per request (VAPID, decryption)", String(format: "%.1f µs", median(rounds.map { $0.pushspool.fakeMicrosPerRequest })),
             String(format: "for node %.1f µs", median(rounds.map { $0.node.fakeMicrosPerRequest })), "", "", ""])
        row(["peak RSS", mb(median(rounds.map { Double($0.pushspool.peakRSS) })), "node " + mb(median(rounds.map { Double($0.node.peakRSS) })), "", "", ""])
        let delivered = rounds.map { $0.pushspool.delivered }.min() ?? -1
        let dups = rounds.map { $0.pushspool.duplicates }.max() ?? -1
        let conns = rounds.map { $0.pushspool.connections }.max() ?? -1
        let clean = rounds.allSatisfy { $0.pushspool.problems.isEmpty && $0.pushspool.plaintexts == [plaintext] }
        row(["delivered (decrypted) / duplicates / TLS connections (worst run)", "\(delivered) / \(dups) / \(conns)",
             "node \(rounds.map { $0.node.delivered }.min() ?? -1) / \(rounds.map { $0.node.duplicates }.max() ?? -1) / \(rounds.map { $0.node.connections }.max() ?? -1)",
             "", "\(count) / 0", delivered == count && dups == 0 && clean ? "yes" : "no"])
    }
}
