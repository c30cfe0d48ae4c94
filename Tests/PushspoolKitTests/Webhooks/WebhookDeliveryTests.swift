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
        let dir = TempDir("pushspool-webhook-delivery")
        let metrics = WebhookMetrics()
        final class Clock: Sendable { let now = Mutex<Double>(1_700_000_000) }
        let clock = Clock()
        let journal: WebhookJournal
        let delivery: WebhookDelivery

        init(_ answer: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPTransportError>) throws {
            let client = ScriptedHTTPClient(answer)
            self.client = client
            final class Box: @unchecked Sendable { var journal: WebhookJournal? }
            let box = Box()
            let clock = clock
            delivery = WebhookDelivery(hooks: [.init(url: "https://hooks.example.com/in", secret: "whsec-test-secret-0001")],
                                       client: client, journal: { box.journal }, metrics: metrics, log: Log(minimum: .error),
                                       random: { 0 }, now: { clock.now.withLock { $0 } })
            let delivery = delivery
            journal = try WebhookJournal(spoolRoot: dir.url, hookKeys: ["k"], log: Log(minimum: .error)) { delivery.add(file: $0, $1) }
            box.journal = journal
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
}
