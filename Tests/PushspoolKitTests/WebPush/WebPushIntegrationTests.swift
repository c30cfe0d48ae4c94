import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The real binary against the fake push service (Tests/Fakes/webpush.js), which checks VAPID
/// (signature with k, aud, exp, sub), the headers and the size, and decrypts every message with
/// the private keys of the subscriptions it generated.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct WebPushIntegrationTests {
    final class Setup {
        let dir = TempDir("pushspool-webpush")
        let publicKey: String

        init(allowedHosts: [String] = ["127.0.0.1"], retry: String = #"{"max_attempts": 4, "base_delay_ms": 10, "max_delay_ms": 3000}"#,
             declarative: String? = nil) throws {
            self.declarative = declarative
            let keygen = try runPushspool(["webpush", "keygen", "--out", dir.path("vapid.pem")], cwd: dir.url)
            #expect(keygen.status == 0, "\(keygen.stderr)")
            publicKey = keygen.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            self.retry = retry
            allow(allowedHosts)
            try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        }

        private let retry: String
        private let declarative: String?

        /// (Re)writes the configuration with this `allowed_hosts`.
        func allow(_ allowedHosts: [String]) {
            let hosts = allowedHosts.map { "\"\($0)\"" }.joined(separator: ", ")
            dir.write("pushspool.json", """
                {"spool": "spool", "retry": \(retry),
                 "providers": {"webpush": {"vapid_private_key_file": "vapid.pem", "subject": "mailto:ops@example.com",
                                           "allowed_hosts": [\(hosts)]\(declarative.map { #", "declarative": "\#($0)""# } ?? "")}},
                 "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}}
                """)
        }

        func cli(_ args: [String]) throws -> RunResult {
            try runPushspool(args + ["--config", dir.path("pushspool.json")], cwd: dir.url)
        }

        func fake(_ args: [String: String], file: String) throws -> FakeServer {
            var a = args
            a["out"] = dir.path(file)
            let f = try FakeServer("webpush", args: a, dir: dir)
            let r = try cli(["import", dir.path(file)])
            #expect(r.status == 0, "import: \(r.stderr)")
            return f
        }

        func submit(_ id: String, _ json: String) throws {
            dir.write("spool/tmp/\(id).json", json)
            try FileManager.default.moveItem(atPath: dir.path("spool/tmp/\(id).json"), toPath: dir.path("spool/incoming/\(id).json"))
        }

        func deliveries(_ job: String) -> [ResultRecord.Delivery] {
            dir.records("spool/results/\(job).jsonl").compactMap(\.asDelivery)
        }

        /// Drops the job, runs the dispatcher once (which must succeed) and returns the job's deliveries.
        @discardableResult
        func runOnce(_ id: String, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [ResultRecord.Delivery] {
            try submit(id, json)
            let run = try cli(["run", "--once"])
            #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
            return deliveries(id)
        }
    }

    @Test func campaignTo200SubscriptionsWith5Expired() throws {
        let s = try Setup()
        let fake = try s.fake(["subscriptions": "200", "gone": "5"], file: "subs.jsonl")
        try s.runOnce("campaign", #"{"to_tag": "campaign", "pns": ["web"], "from": "bob", "message": "hi", "priority": "high"}"#)

        let state = fake.state()
        #expect((state.list("problems") ?? ["?"]).isEmpty, "\(state["problems"] ?? "")")
        #expect(state.int("delivered") == 195)
        #expect(state.int("duplicates") == 0)
        #expect(state.int("gone") == 5)
        let texts = state.dict("plaintexts") ?? [:]
        #expect(texts.count == 195)
        #expect(texts.values.allSatisfy { ($0 as? [String]) == [#"{"body":"From bob: hi"}"#] })
        #expect(state.dict("headers")?.dict("web-0")?.str("urgency") == "high")
        #expect(state.dict("headers")?.dict("web-0")?.str("ttl") == String(WebPushNotification.defaultTTLSeconds))
        let vapid = try #require(state.dict("vapid"))
        #expect(vapid.str("sub") == "mailto:ops@example.com")
        #expect(vapid.str("k") == s.publicKey)

        let d = s.deliveries("campaign")
        #expect(d.count == 200)
        #expect(d.filter { $0.status == .delivered }.count == 195)
        let gone = d.filter { $0.status == .unregistered }.compactMap(\.device)
        #expect(Set(gone) == Set((195..<200).map { "web-\($0)" }))
        #expect(d.allSatisfy { $0.provider == "webpush" && $0.platform == .web })
        let count = try s.cli(["devices", "--count"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "195")
        // Listings and logs never show a subscription's keys or path.
        let listing = try s.cli(["devices", "--platform", "web"])
        #expect(listing.stdout.contains("\"endpoint\":\"https://127.0.0.1:\(fake.port)…\""))
        #expect(!listing.stdout.contains("/push/") && !listing.stdout.contains("p256dh"))
        #expect(!(s.dir.read("spool/results/campaign.jsonl") ?? "").contains("/push/"))
    }

    @Test func endpointOutsideAllowedHostsGetsNoRequest() throws {
        let s = try Setup()
        let good = try s.fake(["subscriptions": "1"], file: "good.jsonl")
        // Same machine, but named "localhost", which allowed_hosts (127.0.0.1) does not list.
        let outside = try s.fake(["subscriptions": "1", "endpoint-host": "localhost", "id-prefix": "outside-"], file: "outside.jsonl")
        let refused = try s.runOnce("mixed", #"{"to_tag": "campaign", "pns": "web", "message": "hi"}"#)
            .filter { $0.code == "host-not-allowed" }
        #expect(good.state().int("delivered") == 1)
        #expect(outside.state().int("requests") == 0)
        #expect(refused.count == 1)
        #expect(refused.first?.status == .failed)
        #expect(refused.first?.reason == "endpoint host localhost is not in allowed_hosts")
        #expect(try s.cli(["devices", "--count"]).stdout.hasPrefix("2"))   // kept for the operator
    }

    /// An operator's entry with a port allows that port only; the host written with a capital
    /// and a trailing dot is the same name.
    @Test func anEntryWithAPortAllowsThatPortOnly() throws {
        let s = try Setup()
        let named = try s.fake(["subscriptions": "1"], file: "named.jsonl")
        let other = try s.fake(["subscriptions": "1", "id-prefix": "other-"], file: "other.jsonl")
        s.allow(["127.0.0.1.:\(named.port)"])
        let refused = try s.runOnce("ports", #"{"to_tag": "campaign", "pns": "web", "message": "hi"}"#)
            .filter { $0.code == "host-not-allowed" }
        #expect(named.state().int("delivered") == 1)
        #expect(other.state().int("requests") == 0)
        #expect(refused.count == 1)
        #expect(refused.first?.reason == "endpoint host 127.0.0.1 is allowed on port \(named.port) only, not \(other.port)")
    }

    @Test func throttledServiceIsRetriedAfterRetryAfter() throws {
        let s = try Setup()
        let fake = try s.fake(["subscriptions": "3", "throttle": "2"], file: "subs.jsonl")
        try s.runOnce("t", #"{"to_tag": "campaign", "pns": ["web"], "message": "later", "ttl_seconds": 60, "collapse_id": "news"}"#)
        let state = fake.state()
        #expect(state.int("delivered") == 3)
        #expect(state.int("duplicates") == 0)
        #expect(state.dict("byStatus")?.int("429") == 2)
        #expect(state.dict("headers")?.dict("web-1")?.str("ttl") == "60")
        #expect(state.dict("headers")?.dict("web-1")?.str("topic") == "news")
        #expect(s.deliveries("t").filter { $0.status == .delivered }.count == 3)
    }

    @Test func configCheckValidatesKeyFileAndSubject() throws {
        let s = try Setup()
        #expect(try s.cli(["config", "--check"]).status == 0)
        chmod(s.dir.path("vapid.pem"), 0o644)
        s.dir.write("pushspool.json", (s.dir.read("pushspool.json") ?? "").replacingOccurrences(of: "mailto:ops@example.com", with: "ops@example.com"))
        let bad = try s.cli(["config", "--check"])
        #expect(bad.status == 78)
        #expect(bad.stderr.contains("providers.webpush.subject: must be a mailto: address or an https: URL"))
        #expect(bad.stderr.contains("providers.webpush.vapid_private_key_file: \(s.dir.path("vapid.pem")) is readable by every user"))
        let again = try runPushspool(["webpush", "keygen", "--out", s.dir.path("vapid.pem")], cwd: s.dir.url)
        #expect(again.status != 0 && again.stderr.contains("already exists"))
    }

    @Test func sandboxRouteWritesHeadersAndPlaintext() throws {
        let dir = TempDir("pushspool-webpush-sandbox")
        try initSpool(["--spool", dir.path("spool")], cwd: dir.url)
        let handle = #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc","keys":{"p256dh":"\#(RFC8291Example.uaPublic)","auth":"\#(RFC8291Example.auth)"}}"#
        let reg = try runPushspool(["register", "--spool", dir.path("spool"), "--platform", "web", "--handle", handle,
                                    "--tag", "u:alice", "--id", "browser-1"], cwd: dir.url)
        #expect(reg.status == 0, "\(reg.stderr)")
        let bad = try runPushspool(["register", "--spool", dir.path("spool"), "--platform", "web", "--handle",
                                    handle.replacingOccurrences(of: RFC8291Example.auth, with: "AAAA")], cwd: dir.url)
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("register: --handle: keys.auth: must be the authentication secret of 16 bytes, got 3"))
        let job = #"{"to_tag": "u:alice", "pns": ["web"], "from": "bob", "message": "hi", "title": "News"}"#
        dir.write("spool/tmp/j.json", job)
        try FileManager.default.moveItem(atPath: dir.path("spool/tmp/j.json"), toPath: dir.path("spool/incoming/j.json"))
        let run = try runPushspool(["run", "--once", "--spool", dir.path("spool")], cwd: dir.url)
        #expect(run.status == 0, "\(run.stderr)")
        let outbox = dir.list("spool/outbox").flatMap { dir.jsonLines("spool/outbox/\($0)") }
        let line = try #require(outbox.first { $0.str("device") == "browser-1" })
        #expect(line.str("platform") == "web")
        #expect(line.dict("payload")?.str("body") == "From bob: hi")
        #expect(line.dict("payload")?.str("title") == "News")
        #expect(line.dict("headers")?.str("Content-Encoding") == "aes128gcm")
        #expect(line.dict("headers")?.str("Urgency") == "normal")
    }
}
