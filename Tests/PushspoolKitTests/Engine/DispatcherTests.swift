import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

@Suite struct DispatcherTests {
    func seed(_ h: EngineHarness) throws {
        try h.register("alice-iphone", .apns, tags: ["username:alice", "location_Boston"])
        try h.register("alice-pixel", .fcm, tags: ["username:alice"])
        try h.register("alice-pc", .wns, tags: ["username:alice", "location_Boston"])
        try h.register("bob-iphone", .apns, tags: ["username:bob", "location_Boston"])
    }

    @Test("a send job fans out per platform and device, logs every target, moves to done/")
    func fanOut() throws {
        let h = try EngineHarness()
        try seed(h)
        try h.drop("t.json", #"{"id":"t1","to_tag":"username:alice","pns":["apns","gcm","wns"],"from":"bob","message":"hi"}"#)
        let provider = ScriptedProvider()
        let reports = h.runOnce(provider)
        #expect(reports.map(\.id) == ["t1"])
        #expect(h.list(.done) == ["t.json"])
        let job = h.records("t1").first?.asJob
        #expect(job?.targets == 3)
        #expect(job?.pns == ["apns", "fcm", "wns"])
        #expect(Set(h.deliveries("t1").compactMap(\.device)) == ["alice-iphone", "alice-pixel", "alice-pc"])
        #expect(h.summary("t1")?.delivered == 3)
        #expect(h.summary("t1")?.status == .done)
        #expect(provider.requests.count == 3)
    }

    @Test("gone devices are removed from the registry and logged unregistered")
    func prune() throws {
        let h = try EngineHarness()
        try seed(h)
        try h.drop("p.json", #"{"id":"p","tags":"location_Boston","pns":["apns","wns"],"message":"m"}"#)
        let provider = ScriptedProvider { r in
            if case .device(let d) = r.recipient, d.id == "bob-iphone" { return ProviderResult(.deviceGone(since: nil), code: "410", reason: "Unregistered") }
            return ProviderResult(.delivered, code: "200")
        }
        h.runOnce(provider)
        #expect(h.summary("p")?.unregistered == 1)
        #expect(h.summary("p")?.delivered == 2)
        #expect(try h.registry.device(id: "bob-iphone") == nil)
        #expect(try h.registry.device(id: "alice-iphone") != nil)
        let bob = h.deliveries("p").first { $0.device == "bob-iphone" }
        #expect(bob?.status == .unregistered)
        #expect(bob?.reason == "Unregistered")
    }

    /// Prunes run on a queue of their own, batched: while another process holds the registry's
    /// write lock, answers are still logged and slots freed, so sending goes on; the gone devices
    /// are deleted once the lock is released, before the job finishes.
    @Test func aBusyRegistryDelaysPrunesNotSends() throws {
        let h = try EngineHarness()
        h.concurrency = 4
        for i in 0..<40 { try h.register("d\(i)", .fcm, tags: ["all"]) }
        try h.drop("busy.json", #"{"id":"busy","to_tag":"all","pns":["fcm"],"message":"m"}"#)
        let provider = ScriptedProvider(delay: 0.005) { r in
            if case .device(let d) = r.recipient, Int(d.id.dropFirst())! % 2 == 0 {
                return ProviderResult(.deviceGone(since: nil), code: "404", reason: "UNREGISTERED")
            }
            return ProviderResult(.delivered, code: "200")
        }
        let holder = try SQLiteDatabase(path: h.dir.path("spool/registry.sqlite"))
        try holder.execute("BEGIN IMMEDIATE")
        let finished = DispatchSemaphore(value: 0)
        let dispatcher = h.makeDispatcher(routes: [.fcm: ProviderState(provider: provider)])
        Thread.detachNewThread {
            dispatcher.runOnce()
            finished.signal()
        }
        // Every target is answered and logged while the lock is still held.
        eventually("all 40 targets logged while the lock is held", timeout: 30, lastSeen: { "\(h.deliveries("busy").count) logged" }) {
            h.deliveries("busy").count == 40
        }
        #expect(provider.requests.count == 40)
        #expect(finished.wait(timeout: .now()) == .timedOut)      // the job waits for its prunes
        try holder.execute("COMMIT")
        holder.close()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(h.summary("busy")?.unregistered == 20)
        #expect(try h.registry.count(platforms: [.fcm], matching: nil) == 20)
    }

    @Test("an id with a completed result log is a duplicate and is not sent again")
    func duplicate() throws {
        let h = try EngineHarness()
        try seed(h)
        let job = #"{"id":"dup","to_tag":"username:bob","pns":["apns"],"message":"once"}"#
        try h.drop("first.json", job)
        let provider = ScriptedProvider()
        h.runOnce(provider)
        try h.drop("second.json", job)
        let reports = h.runOnce(provider)
        #expect(reports.first?.outcome == .duplicate)
        #expect(provider.requests.count == 1)
        #expect(h.list(.done).sorted() == ["first.json", "second.duplicate.json"])
        #expect(h.deliveries("dup").count == 1)
    }

    @Test("job ids that differ only by case are one id: the second is a duplicate, the log keeps the first spelling")
    func caseFoldedDuplicate() throws {
        let h = try EngineHarness()
        try seed(h)
        try h.drop("first.json", #"{"id":"Case1","to_tag":"username:bob","pns":["apns"],"message":"once"}"#)
        let provider = ScriptedProvider()
        h.runOnce(provider)
        try h.drop("second.json", #"{"id":"case1","to_tag":"username:bob","pns":["apns"],"message":"once"}"#)
        #expect(h.runOnce(provider).map(\.outcome) == [.duplicate])
        try h.drop("third.json", #"{"id":"CASE1","to_tag":"username:bob","pns":["apns"],"message":"once"}"#)
        #expect(h.runOnce(provider).map(\.outcome) == [.duplicate])
        #expect(provider.requests.count == 1)
        #expect(h.list(.done).sorted() == ["first.json", "second.duplicate.json", "third.duplicate.json"])
        // One result log, named as first given, on a case-sensitive disk as on a case-insensitive one.
        let logs = try FileManager.default.contentsOfDirectory(atPath: h.spool.url(.results).path).filter { !$0.hasPrefix(".") }
        #expect(logs == ["Case1.jsonl"])
        #expect(h.spool.resultURL(jobID: "cASE1").lastPathComponent == "Case1.jsonl")
    }

    @Test("pause, cancel and resume take a job id in any case and write the request under the job's own spelling")
    func steeringFoldsCase() throws {
        let h = try EngineHarness()
        try h.drop("spring.json", #"{"id":"Spring-Sale","to_tag":"username:bob","pns":["apns"],"message":"soon"}"#)
        let steering = JobSteering(spool: h.spool)
        let paused = try steering.request(.pause, id: "spring-sale")
        #expect(paused.folder == .incoming && paused.file == "spring.json")
        let controls = try FileManager.default.contentsOfDirectory(atPath: h.spool.url(.control).path)
        #expect(controls.contains("Spring-Sale.pause"), "\(controls)")
        #expect(try steering.resume(id: "SPRING-SALE", wait: 0).resumed == .noDispatcher)
        #expect(try steering.resume(id: "spring-SALE", wait: 0).resumed == .notPaused)
        #expect(throws: JobSteering.Failure.self) { try steering.request(.cancel, id: "spring-sale-2") }
    }

    @Test("two spellings of one job id dropped together: one is sent, the other waits and is a duplicate")
    func caseFoldedTwinsTogether() throws {
        let h = try EngineHarness()
        try seed(h)
        let provider = ScriptedProvider(delay: 0.05)
        try h.drop("a.json", #"{"id":"Twin","to_tag":"username:bob","pns":["apns"],"message":"once"}"#)
        try h.drop("b.json", #"{"id":"twin","to_tag":"username:bob","pns":["apns"],"message":"once"}"#)
        h.runOnce(provider)
        #expect(provider.requests.count == 1)
        #expect(h.list(.active).isEmpty)
        #expect(h.list(.done).filter { $0.hasSuffix(".duplicate.json") }.count == 1)
    }

    @Test("an invalid job is quarantined with its reason in one line; a corrected resubmission runs")
    func quarantine() throws {
        let h = try EngineHarness()
        try seed(h)
        try h.drop("bad.json", #"{"to_tag":"username:bob","pns":["apnz"],"message":"x"}"#)
        let reports = h.runOnce(ScriptedProvider())
        #expect(h.list(.failed) == ["bad.json"])
        #expect(h.summary("bad")?.status == .failed)
        #expect(h.summary("bad")?.error?.contains("pns[0]: unknown platform \"apnz\"") == true)
        if case .failed = reports.first?.outcome {} else { Issue.record("expected a failed report") }
        try h.drop("bad.json", #"{"to_tag":"username:bob","pns":["apns"],"message":"x"}"#)
        let provider = ScriptedProvider()
        h.runOnce(provider)
        #expect(provider.requests.count == 1)
        #expect(h.summary("bad")?.status == .done)
    }

    @Test("not_before holds a job in incoming/ until its time; past times run at once")
    func notBefore() throws {
        let h = try EngineHarness()
        try seed(h)
        try h.drop("later.json", #"{"id":"later","to_tag":"username:bob","pns":["apns"],"message":"x","not_before":"2999-01-01T00:00:00Z"}"#)
        try h.drop("now.json", #"{"id":"now","to_tag":"username:bob","pns":["apns"],"message":"x","not_before":"2020-01-01T00:00:00+02:00"}"#)
        let provider = ScriptedProvider()
        h.runOnce(provider)
        #expect(h.list(.incoming) == ["later.json"])
        #expect(h.list(.done) == ["now.json"])
        #expect(provider.requests.count == 1)
    }

    @Test("a watching dispatcher wakes for a scheduled job without polling")
    func scheduledWake() throws {
        let h = try EngineHarness()
        try seed(h)
        let due = Date().addingTimeInterval(1.0)
        let stamp = Timestamp.rfc3339(due)
        try h.drop("soon.json", #"{"id":"soon","to_tag":"username:bob","pns":["apns"],"message":"x","not_before":"\#(stamp)"}"#)
        let provider = ScriptedProvider()
        let state = ProviderState(provider: provider)
        let dispatcher = h.makeDispatcher(routes: [.apns: state, .fcm: state, .wns: state])
        let finished = DispatchSemaphore(value: 0)
        // Poll interval of an hour: only the not_before timer can wake it.
        let watcher = SpoolWatcher(directory: h.dir.url.appendingPathComponent("nonexistent"), pollInterval: 3600)
        DispatchQueue.global().async { dispatcher.runForever(watcher: watcher); finished.signal() }
        eventually("the scheduled job to be woken and done", timeout: 30) { !h.list(.done).isEmpty }
        dispatcher.stop()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(h.list(.done) == ["soon.json"])
        #expect(provider.requests.count == 1)
        #expect(provider.requests.first.map { _ in Date() >= due } == true)
    }

    #if os(Linux)
    /// The lock of a job in `active/` is let go as the kernel lets go of a killed dispatcher's:
    /// its file is closed. A watching dispatcher that found the job held takes it over on that
    /// close, with its periodic look (the fallback where closes cannot be watched) an hour away.
    @Test("a watching dispatcher takes over a job whose holder let go, on the close, not on a period")
    func takeOverOnClose() throws {
        let h = try EngineHarness()
        try seed(h)
        let path = h.dir.path("spool/active/held.json")
        h.dir.write("spool/active/held.json", #"{"id":"held","to_tag":"username:bob","pns":["apns"],"message":"m"}"#)
        let holder = try JobFile(path: path)
        let looked = try #require(FileCloseWatch(path: path))
        let provider = ScriptedProvider()
        let state = ProviderState(provider: provider)
        let dispatcher = h.makeDispatcher(routes: [.apns: state, .fcm: state, .wns: state])
        let finished = DispatchSemaphore(value: 0)
        let watcher = SpoolWatcher(directory: h.dir.url.appendingPathComponent("nonexistent"), pollInterval: 3600)
        DispatchQueue.global().async { dispatcher.runForever(watcher: watcher, orphanFallback: 3600); finished.signal() }
        // Its first look tried the job's lock and closed the file again: the job is held.
        #expect(looked.wait(until: .now() + 30))
        #expect(h.list(.active) == ["held.json"] && provider.requests.isEmpty)
        holder.release()
        eventually("the job taken over and done", timeout: 30) { h.list(.done) == ["held.json"] }
        dispatcher.stop()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(provider.requests.count == 1)
        #expect(h.summary("held")?.delivered == 1)
    }
    #endif

    @Test("a crashed run resumes: targets already final in the result log are not sent again")
    func resume() throws {
        let h = try EngineHarness()
        try seed(h)
        // As a kill -9 leaves it: the job in active/, a log with a job line, one delivery, a torn line.
        h.dir.write("spool/active/r.json", #"{"id":"r","tags":"location_Boston","pns":["apns","wns"],"message":"m"}"#)
        h.dir.write("spool/results/r.jsonl", """
            {"type":"job","id":"r","file":"r.json","received_at":"2026-01-01T00:00:00.000Z","pns":["apns","wns"],"targets":3}
            {"type":"delivery","platform":"apns","provider":"apns","device":"alice-iphone","status":"delivered","attempts":2,"code":"200","reason":null,"provider_id":"a","at":"2026-01-01T00:00:01.000Z"}
            {"type":"delivery","platform":"wns","provid
            """)
        let provider = ScriptedProvider()
        h.runOnce(provider)
        #expect(Set(provider.attemptsByRecipient.keys) == ["apns|bob-iphone", "wns|alice-pc"])
        #expect(h.list(.done) == ["r.json"])
        #expect(h.records("r").compactMap(\.asJob).count == 1)
        #expect(h.deliveries("r").count == 3)
        #expect(h.summary("r")?.delivered == 3)
        #expect(h.summary("r")?.retries == 1)
    }

    @Test("two dispatchers on one spool process every job exactly once")
    func twoDispatchers() throws {
        let h = try EngineHarness()
        for i in 0..<20 { try h.register("d\(i)", .fcm, tags: ["all"]) }
        for i in 0..<40 { try h.drop("j\(i).json", #"{"id":"j\#(i)","to_tag":"all","pns":["fcm"],"message":"m\#(i)"}"#) }
        let provider = ScriptedProvider()
        let state = ProviderState(provider: provider)
        let routes: [Platform: ProviderState] = [.apns: state, .fcm: state, .wns: state]
        let a = h.makeDispatcher(routes: routes), b = h.makeDispatcher(routes: routes)
        DispatchQueue.concurrentPerform(iterations: 2) { i in (i == 0 ? a : b).runOnce() }
        // A job a dispatcher found claimed by the other is picked up by neither twice.
        #expect(h.list(.done).count == 40)
        #expect(provider.requests.count == 40 * 20)
        #expect(Set(provider.requests.map { "\($0.jobID)|\(ScriptedProvider.key(platform: $0.platform, recipient: $0.recipient))" }).count == 800)
    }

    @Test("register and unregister jobs change the registry and log the change")
    func registrationJobs() throws {
        let h = try EngineHarness()
        try h.drop("reg.json", #"{"kind":"register","id":"new-phone","platform":"gcm","handle":"tok-1","tags":["username:zoe"]}"#)
        h.runOnce(ScriptedProvider())
        #expect(try h.registry.device(id: "new-phone")?.platform == .fcm)
        try h.drop("unreg.json", #"{"kind":"unregister","id":"new-phone"}"#)
        h.runOnce(ScriptedProvider())
        #expect(try h.registry.device(id: "new-phone") == nil)
        #expect(h.records("unreg").contains { $0.asRegistration?.action == "unregister" })
        #expect(h.list(.done).sorted() == ["reg.json", "unreg.json"])
    }

    @Test("a hub route gets one request per platform with the audience as written")
    func hubRoute() throws {
        let h = try EngineHarness()
        try h.drop("hub.json", #"{"id":"hub","tags":"a && !b","pns":["apns","fcm"],"message":"m"}"#)
        let hub = ScriptedProvider(name: "azure", resolvesTags: true) { _ in ProviderResult(.delivered, code: "201", providerID: "n-1") }
        h.runOnce(hub)
        #expect(hub.requests.count == 2)
        #expect(hub.requests.allSatisfy { $0.recipient == .hub(.expression(try! TagExpression.parse("a && !b"), source: "a && !b")) })
        let lines = h.deliveries("hub")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.target == .tags("a && !b") && $0.provider == "azure" })
    }
}

/// A registration the registry could not take waits in active/ when trying later can help (the
/// write lock held by an import, the database server unreachable) and fails only on a verdict.
@Suite struct RegistryFailureTests {
    @Test func transientKindsWaitAndVerdictsFail() {
        guard case .interrupted(let busy) = RegistrationExecutor.failure(RegistrationError(RegistryError("registry: database is locked", kind: .busy))) else {
            Issue.record("a busy registry should leave the job in active/"); return
        }
        #expect(busy == .registryBusy && busy.description.hasPrefix("registry busy"))
        guard case .interrupted(let gone) = RegistrationExecutor.failure(RegistrationError(RegistryError("registry: PostgreSQL unreachable: x", kind: .unavailable))) else {
            Issue.record("an unreachable registry should leave the job in active/"); return
        }
        #expect(gone.description.hasPrefix("registry unreachable (PostgreSQL unreachable: x)"))
        #expect(RegistrationExecutor.failure(RegistrationError(RegistryError("registry: disk I/O error"))) == .failed("registry update failed: disk I/O error"))
    }
}
