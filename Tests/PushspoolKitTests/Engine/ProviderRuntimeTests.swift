import Foundation
import Testing
@testable import PushspoolKit
import PushspoolHTTP
import PushspoolTestSupport
import PushspoolCore

/// What a dispatcher exports of its providers: the failed answers noted as the worker pool
/// classifies each answer, the connections of its clients, written in its presence record (which `status
/// --json` and the System page read, merged across dispatchers) and in its metrics.
@Suite struct ProviderRuntimeTests {
    static func device(_ handle: String) -> Device {
        Device(id: handle, platform: .fcm, handle: handle, tags: [], updatedAt: Date())
    }

    /// Sends one request per handle through `state` by the worker pool (as the engine does) and
    /// waits for every answer.
    static func send(_ handles: [String], via state: ProviderState) {
        let pool = WorkerPool(concurrency: 2, policy: RetryPolicy(maxAttempts: 1, baseDelay: 0.001, maxDelay: 0.01), random: { 0.5 })
        let done = DispatchGroup()
        for h in handles {
            done.enter()
            let request = SendRequest(jobID: "j", platform: .fcm, recipient: .device(device(h)),
                                      notification: .fcm(FCMNotification(message: .object([]))))
            pool.submit(request, via: state) { _ in done.leave() }
        }
        done.wait()
    }

    static let script: @Sendable (SendRequest) -> ProviderResult = { request in
        guard case .device(let d) = request.recipient else { return ProviderResult(.delivered, code: "200") }
        if d.handle.hasPrefix("bad") {
            // The reason quotes the token, as some services do: only the word may be kept.
            return ProviderResult(.rejected, code: "400", reason: "INVALID_ARGUMENT: token \(d.handle) is not valid")
        }
        if d.handle.hasPrefix("gone") { return ProviderResult(.deviceGone(since: nil), code: "404", reason: "UNREGISTERED") }
        return ProviderResult(.delivered, code: "200")
    }

    @Test func theFailedAnswersAndConnectionsOfAProvider() throws {
        let scripted = ScriptedProvider(name: "fcm", script: Self.script)
        let state = ProviderState(provider: scripted, name: "fcm-main",
                                  connections: { HTTPConnectionCount(open: 2, inFlight: 5) })
        #expect(state.provider === scripted, "the provider as made is what the engine sends through")
        Self.send(["ok-1", "ok-2"], via: state)
        #expect(state.runtime().recentErrors.isEmpty && state.runtime().errorTotals.isEmpty, "deliveries are no errors")
        Self.send(["bad-secret-token-1", "bad-secret-token-2"], via: state)
        Self.send(["gone-1"], via: state)
        let r = state.runtime()
        #expect(r.name == "fcm-main" && r.connections == 2 && r.inFlight == 5)
        #expect(r.recentErrors.map(\.code) == ["404", "400"], "newest first")
        #expect(r.recentErrors.map(\.count) == [1, 2], "two in a row are one entry")
        #expect(r.recentErrors.map { $0.reason ?? "" } == ["UNREGISTERED", "INVALID_ARGUMENT"])
        #expect(r.recentErrors[1].meaning == FailureGuide.entry(platform: "fcm", code: "400", reason: "INVALID_ARGUMENT").meaning)
        #expect(r.errorTotals == ["400": 2, "404": 1])
        let written = r.json().encodedString
        #expect(!written.contains("secret-token"), "no handle in what is exported: \(written)")
        #expect(scripted.requests.count == 5, "every request reached the provider")
    }

    @Test func theRecordCarriesThemAndStatusMergesTheDispatchers() throws {
        let e1 = RecentError(at: 1_800_000_000.5, code: "400", reason: "BadDeviceToken", meaning: "m1", count: 3)
        let e2 = RecentError(at: 1_800_000_002.25, code: "503", reason: nil, meaning: "m2")
        let a = ProviderRuntime(name: "apns", connections: 1, inFlight: 4, recentErrors: [e1], errorTotals: ["400": 3])
        var record = DispatcherRecord(pid: 77, instance: "abc", heartbeat: Date())
        record.providers = [a]
        let back = try #require(DispatcherRecord(record.encoded()))
        #expect(back.providers == [a], "the record round-trips its providers")
        #expect(DispatcherRecord(DispatcherRecord(pid: 1, instance: "x", heartbeat: Date()).encoded())?.providers == [],
                "a job's record has none")

        let b = ProviderRuntime(name: "apns", connections: 2, inFlight: 1, recentErrors: [e2], errorTotals: ["400": 1, "503": 1])
        let f = ProviderRuntime(name: "fcm", connections: 1, inFlight: 0, recentErrors: [], errorTotals: [:])
        let merged = ProviderRuntime.merged([f, a, b])
        #expect(merged.map(\.name) == ["apns", "fcm"])
        #expect(merged[0].connections == 3 && merged[0].inFlight == 5 && merged[0].errorTotals == ["400": 4, "503": 1])
        #expect(merged[0].recentErrors == [e2, e1], "interleaved newest first")
        #expect(ProviderRuntime.merged([a, b], keep: 1)[0].recentErrors == [e2])
        let line = merged[0].line(now: Date(timeIntervalSince1970: 1_800_000_012.25))
        #expect(line == "provider apns: 3 connections, 5 in flight, 5 failed answers, the last 10 s ago: 503", "\(line)")
        #expect(merged[1].line(now: Date()) == "provider fcm: 1 connection, 0 in flight, no failed answers")
    }

    @Test func thePresenceRecordIsWhatStatusReads() throws {
        let dir = TempDir()
        let spool = try Spool(root: dir.url.appendingPathComponent("s"))
        let state = ProviderState(provider: ScriptedProvider(name: "fcm", script: Self.script), name: "fcm",
                                  connections: { HTTPConnectionCount(open: 1, inFlight: 0) })
        Self.send(["gone-7"], via: state)
        let presence = DispatcherPresence(spool: spool) { [state.runtime()] }
        presence.start()
        defer { presence.stop() }
        let seen = DispatcherPresence.running(on: spool)
        #expect(seen.count == 1)
        let providers = DispatcherPresence.providers(of: seen)
        #expect(providers.map(\.name) == ["fcm"] && providers.first?.connections == 1)
        #expect(providers.first?.recentErrors.first?.reason == "UNREGISTERED")
    }

    @Test func theMetricsCarryConnectionsAndErrorsByCode() throws {
        var g = Metrics.Gauges()
        let e = RecentError(at: 1, code: "400", reason: nil, meaning: "m")
        g.runtime = [ProviderRuntime(name: "apns", connections: 2, inFlight: 7, recentErrors: [e], errorTotals: ["400": 12, "transport": 1])]
        let m = try Exposition(Metrics().render(g))
        #expect(m.types["pushspool_provider_connections"] == "gauge")
        #expect(m.types["pushspool_provider_errors_total"] == "counter")
        #expect(m.value("pushspool_provider_connections", ["provider": "apns"]) == 2)
        #expect(m.value("pushspool_provider_requests_in_flight", ["provider": "apns"]) == 7)
        #expect(m.value("pushspool_provider_errors_total", ["provider": "apns", "code": "400"]) == 12)
        #expect(m.value("pushspool_provider_errors_total", ["provider": "apns", "code": "transport"]) == 1)
    }
}
