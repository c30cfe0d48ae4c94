import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// The delivery thread against a scripted client and a clock the test sets: per-job order,
/// giving up after 24 hours into `webhooks/failed/`, the signature.
@Suite struct WebhookDeliveryTests {
    final class Rig {
        let dir: TempDir
        let metrics = WebhookMetrics()
        final class Clock: Sendable { let now = Mutex<Double>(1_700_000_000) }
        let clock = Clock()
        let journal: WebhookJournal
        let delivery: WebhookDelivery

        init(window: Int = 4096, dir: TempDir = TempDir("pushspool-webhook-delivery"), recover: Bool = false,
             _ answer: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPTransportError>) throws {
            self.dir = dir
            let client = ScriptedHTTPClient(answer)
            self.client = client
            final class Box: @unchecked Sendable { var journal: WebhookJournal? }
            let box = Box()
            let clock = clock
            delivery = WebhookDelivery(hooks: [.init(url: "https://hooks.example.com/in", secret: "whsec-test-secret-0001")],
                                       client: client, journal: { box.journal }, metrics: metrics, log: Log(minimum: .error),
                                       window: window, random: { 0 }, now: { clock.now.withLock { $0 } })
            let delivery = delivery
            journal = try WebhookJournal(spoolRoot: dir.url, hookKeys: ["k"], log: Log(minimum: .error)) { delivery.add(file: $0, $1) }
            box.journal = journal
            // As `Webhooks.start` does: what an earlier run left, on disk, read in turn.
            if recover { for (file, lines) in journal.pendingFiles() { delivery.addOnDisk(file: file, lines: lines) } }
            journal.start()
            delivery.start()
        }

        let client: ScriptedHTTPClient

        func entry(_ order: String, _ body: String, created: Double) -> WebhookJournal.Entry {
            WebhookJournal.Entry(hook: 0, order: order, created: created, body: Array(body.utf8))
        }

        var bodies: [String] { client.requests.withLock { $0.map { String(decoding: $0.body, as: UTF8.self) } } }

        deinit {
            journal.stop()
            delivery.stop()
        }
    }

    @Test func privateAddressesOnlyWhenWrittenOrAllowed() {
        func hook(_ url: String, _ allowed: Bool = false) -> WebhookConfig {
            var h = WebhookConfig(url: url, secret: Secret("whsec-test-secret-0001"), events: [.jobFinished])
            h.privateAddresses = allowed
            return h
        }
        let guardrail = Webhooks.addressGuard([hook("https://hooks.example.com/in"), hook("http://127.0.0.1:9/x"),
                                               hook("https://[::1]:8443/x"), hook("https://receiver.internal/x", true)])
        // A name is checked where it connects (it may resolve to 10.x or 127.x); a loopback
        // address written in a URL, or a host the operator allowed, is not.
        #expect(!guardrail.exempt("hooks.example.com"))
        #expect(guardrail.exempt("127.0.0.1") && guardrail.exempt("::1") && guardrail.exempt("receiver.internal"))
        #expect(!guardrail.exempt("localhost.example.com") && !guardrail.exempt("10.0.0.1"))
    }

    @Test func signatureIsHMACOfTimeDotBody() {
        // python3: hmac.new(b"whsec-test-secret-0001", b'1700000000.{"id":"evt_1"}', hashlib.sha256).hexdigest()
        #expect(WebhookSignature.value(secret: "whsec-test-secret-0001", body: Array(#"{"id":"evt_1"}"#.utf8), at: 1_700_000_000)
                == "t=1700000000,v1=21e011b1fcbc396cfa76dce984336d0a50a99f7dde8867909762f2ee9d7caecd")
    }

    @Test func eventsOfOneJobWaitForTheOneBefore() throws {
        let failedOnce = Mutex(false)
        let rig = try Rig { request in
            let body = String(decoding: request.body, as: UTF8.self)
            let first = body == "a1" && !failedOnce.withLock { f in defer { f = true }; return f }
            return .success(HTTPResponse(status: first ? 500 : 204))
        }
        try rig.journal.append([rig.entry("A", "a1", created: 1_700_000_000), rig.entry("A", "a2", created: 1_700_000_000),
                                rig.entry("B", "b1", created: 1_700_000_000)], durable: true)
        eventually("every event delivered", lastSeen: { "\(rig.bodies)" }) { rig.metrics.deliveredCount == 3 }
        let sent = rig.bodies
        #expect(sent.filter { $0 == "a1" }.count == 2)
        // a2 only after a1 was delivered (its second attempt).
        #expect(sent.lastIndex(of: "a1")! < sent.firstIndex(of: "a2")!)
        #expect(rig.client.requests.withLock { $0.allSatisfy { $0.headers.contains { $0.0 == "Pushspool-Signature" && $0.1.hasPrefix("t=1700000000,v1=") } } })
        eventually("the journal file removed") {
            ((try? FileManager.default.contentsOfDirectory(atPath: rig.dir.path("webhooks/pending"))) ?? ["?"]).isEmpty
        }
    }

    @Test func givenUpAfter24HoursIntoFailed() throws {
        let rig = try Rig { _ in .success(HTTPResponse(status: 503, headers: ["Retry-After": "1"])) }
        // Made 24 h and a second ago: its first failure is its last.
        try rig.journal.append([rig.entry("A", "old", created: 1_700_000_000 - 86_401)], durable: true)
        eventually("the event given up", lastSeen: { "\(rig.bodies)" }) { rig.metrics.failedCount == 1 }
        let failed = (try? FileManager.default.contentsOfDirectory(atPath: rig.dir.path("webhooks/failed"))) ?? []
        #expect(failed.count == 1)
        #expect(failed.first.flatMap { rig.dir.read("webhooks/failed/\($0)") }?.contains(#""body":"old""#) == true)
        #expect(WebhookJournal.counts(spoolRoot: rig.dir.url) == (pending: 0, failed: 1))
        #expect(rig.metrics.deliveredCount == 0)
    }

    /// A receiver down while more events are made than the window holds: the rest wait in their
    /// files, the window never grows past its size, and once the receiver is back every event
    /// arrives, each job's in the order made, and the files are gone.
    @Test func aBacklogLargerThanTheWindowWaitsOnDiskAndArrivesWhole() throws {
        let down = Atomic<Bool>(true), refused = Atomic<Int>(0)
        let delivered = Mutex<[String]>([])
        let rig = try Rig(window: 8) { request in
            if down.load(ordering: .acquiring) {
                refused.add(1, ordering: .relaxed)
                return .failure(HTTPTransportError("connection refused"))
            }
            delivered.withLock { $0.append(String(decoding: request.body, as: UTF8.self)) }
            return .success(HTTPResponse(status: 204))
        }
        // 30 files of 20 events, of 3 jobs.
        var made: [String: [String]] = [:]
        for f in 0..<30 {
            let entries = (0..<20).map { i in rig.entry("job\((f + i) % 3)", "j\((f + i) % 3)-\(f)-\(i)", created: 1_700_000_000) }
            for e in entries { made[e.order, default: []].append(String(decoding: e.body, as: UTF8.self)) }
            try rig.journal.append(entries, durable: true)
        }
        eventually("the receiver refused", lastSeen: { "\(refused.load(ordering: .relaxed))" }) { refused.load(ordering: .relaxed) > 200 }
        #expect(rig.delivery.heldCount <= 8)
        // Counted as each file reaches delivery, just after its write returned.
        eventually("every event pending", lastSeen: { "\(rig.metrics.pendingCount)" }) { rig.metrics.pendingCount == 600 }
        #expect(rig.delivery.heldCount <= 8)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: rig.dir.path("webhooks/pending"))) ?? []).count > 1)
        down.store(false, ordering: .releasing)
        eventually("every event delivered", lastSeen: { "\(rig.metrics.deliveredCount)" }) { rig.metrics.deliveredCount == 600 }
        let sent = delivered.withLock { $0 }
        #expect(sent.count == 600 && Set(sent).count == 600)
        for (job, bodies) in made { #expect(sent.filter { $0.hasPrefix("j\(job.dropFirst(3))-") } == bodies, "\(job)") }
        eventually("the journal files removed") {
            ((try? FileManager.default.contentsOfDirectory(atPath: rig.dir.path("webhooks/pending"))) ?? ["?"]).isEmpty
        }
        #expect(rig.delivery.heldCount == 0)
    }

    /// What an earlier run left in `pending/` is read as the window makes room, not all at once.
    @Test func filesLeftByAnEarlierRunAreReadInTurn() throws {
        let dir = TempDir("pushspool-webhook-delivery")
        do {
            let first = try Rig(dir: dir) { _ in .failure(HTTPTransportError("connection refused")) }
            for f in 0..<10 {
                try first.journal.append((0..<10).map { first.entry("job\(f)", "e\(f)-\($0)", created: 1_700_000_000) }, durable: true)
            }
        }
        let most = Mutex(0)
        let holder = Mutex<WebhookDelivery?>(nil)
        let rig = try Rig(window: 4, dir: dir, recover: true) { request in
            let held = holder.withLock { $0?.heldCount } ?? 0
            most.withLock { $0 = max($0, held) }
            return .success(HTTPResponse(status: 200))
        }
        holder.withLock { $0 = rig.delivery }
        eventually("every event delivered", lastSeen: { "\(rig.metrics.deliveredCount)" }) { rig.metrics.deliveredCount == 100 }
        #expect(Set(rig.bodies).count == 100)
        #expect(most.withLock { $0 } <= 4)
        eventually("the journal files removed") {
            ((try? FileManager.default.contentsOfDirectory(atPath: rig.dir.path("webhooks/pending"))) ?? ["?"]).isEmpty
        }
    }

    /// The webhooks' client trusts `tls.ca_file` as the providers' clients do, read and checked
    /// in one place: a file holding no certificate is refused with the same one line.
    @Test func theCAFileIsCheckedAsForProviders() throws {
        let dir = TempDir("pushspool-webhook-ca")
        dir.write("ca.pem", "not a certificate\n")
        let json = #"{"tls": {"ca_file": "\#(dir.path("ca.pem"))"}, "webhooks": [{"url": "https://hooks.example.com/in", "secret": "whsec-test-secret-0001", "events": ["job.finished"]}]}"#
        let config = try ConfigParser.parse(Array(json.utf8), source: "t", environment: [:])
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let error = #expect(throws: (any Error).self) { _ = try Webhooks(config: config, spool: spool, metrics: WebhookMetrics(), log: Log(minimum: .error)) }
        #expect("\(error.map { "\($0)" } ?? "")" == "tls.ca_file: \(dir.path("ca.pem")) holds no PEM certificate")
        #expect(EngineSetup.providerContext(config: config, spool: nil, log: Log(minimum: .error)).problems
                == ["tls.ca_file: \(dir.path("ca.pem")) holds no PEM certificate"])
    }
}
