import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// A spool on a filesystem where locks do nothing: a second dispatcher sees a running job's
/// file as free, takes the job over (its owner record says this host, whose free lock means a
/// dead owner) and sends it. The first one finds the other's owner record before its next batch
/// of targets and stops: the pushes sent twice are at most one batch and what was in flight.
/// The lock is made ineffective for the second dispatcher by `PUSHSPOOL_TEST_LOCKS_DO_NOTHING`.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct LockFreeTakeoverTests {
    @Test func theFirstOwnerStopsWithinABatchOnceTakenOver() throws {
        let devices = 6_000, concurrency = 16
        // 16 streams answered after 40 ms each: about 400/s, so the campaign takes 15 s.
        let s = try APNsSpool(fakeArgs: ["hold-ms": "40", "track-limit": "0"], concurrency: concurrency)
        try s.importDevices(devices, tag: "all")
        s.drop("campaign", #"{"id":"campaign","to_tag":"all","pns":["apns"],"message":"m"}"#)
        func answered() -> Int { s.fake.state()["answered"] as? Int ?? 0 }

        // The first dispatcher; its reports (stdout) say when it noticed the takeover.
        let first = pushspoolProcess(["run"] + s.common, cwd: nil, env: [:])
        let out = Pipe()
        first.standardOutput = out
        first.standardError = FileHandle.nullDevice
        try first.run()
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL); first.waitUntilExit() } }
        let reports = Mutex("")
        let reader = Thread {
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                reports.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
        reader.start()
        eventually("the first dispatcher to get going (400 answered)", timeout: 30, lastSeen: { "\(answered()) answered" }) { answered() >= 400 }

        let second = try startPushspool(["run"] + s.common, env: ["PUSHSPOOL_TEST_LOCKS_DO_NOTHING": "1"])
        defer { if second.isRunning { second.terminate(); second.waitUntilExit() } }
        let started = Date()
        eventually("the first dispatcher to notice the takeover", timeout: 30, lastSeen: { reports.withLock { $0 } }) {
            reports.withLock { $0.contains("taken over by a dispatcher on") }
        }
        let noticed = Date().timeIntervalSince(started)
        // Gone now, before it looks at active/ again and, its lock free, takes the job back.
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()

        eventually("the second dispatcher to finish the job", lastSeen: { "active \(s.dir.list("spool/active"))" }) {
            FileManager.default.fileExists(atPath: s.dir.path("spool/done/campaign.json"))
        }
        second.terminate()
        second.waitUntilExit()
        let state = waitForIdle(s.fake, answered: 0)
        let duplicates = state["duplicateDeliveries"] as? Int ?? -1
        print("takeover without a working lock: the first dispatcher stopped \(String(format: "%.2f", noticed)) s after the second started; \(duplicates) pushes went twice (bound: a batch of \(SendRun.ownershipBatch) + 2 × \(concurrency) in flight)")
        #expect(state["tokensDelivered"] as? Int == devices, "every device got it")
        #expect(duplicates >= 0 && duplicates <= SendRun.ownershipBatch + 2 * concurrency, "\(duplicates) sent twice")
    }
}
