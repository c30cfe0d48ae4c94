import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Owner records of jobs in `active/` (`.state/owners/`): the decisions an orphan scan makes on
/// them, the heartbeat, and the atomic takeover.
@Suite struct OwnerRecordTests {
    func record(host: String, age: Double, instance: String = "other-instance") -> OwnerRecord {
        OwnerRecord(host: host, pid: 4242, instance: instance, heartbeat: Date().addingTimeInterval(-age))
    }

    /// The owners of a new spool in `dir`, holding a record per (job name, host, age in seconds).
    func spoolOwners(in dir: TempDir, lease: Double, holding records: [(String, String, Double)] = []) throws -> JobOwners {
        let owners = JobOwners(spool: try Spool(root: dir.url.appendingPathComponent("s")), lease: lease)
        for (name, host, age) in records { owners.records.replace(name, with: record(host: host, age: age)) }
        return owners
    }

    @Test("the record round-trips through its JSON")
    func roundTrip() throws {
        let r = OwnerRecord(host: "host-b", pid: 77, instance: "abc", heartbeat: Date(timeIntervalSince1970: 1_800_000_000.123))
        let back = try #require(OwnerRecord(r.encoded()))
        #expect(back.host == r.host && back.pid == r.pid && back.instance == r.instance)
        #expect(abs(back.heartbeat.timeIntervalSince(r.heartbeat)) < 0.001, "milliseconds kept")
        #expect(OwnerRecord(Array("{}".utf8)) == nil)
    }

    @Test("an orphan is left to a fresh owner on another host, taken from an expired one or one of this host")
    func orphanDecisions() throws {
        let dir = TempDir()
        let owners = try spoolOwners(in: dir, lease: 30, holding: [
            ("fresh.json", "host-b", 1), ("expired.json", "host-b", 31), ("here.json", OwnerRecord.hostName, 1),
        ])

        guard case .failure(let held) = owners.take("fresh.json", origin: .orphan) else {
            Issue.record("a fresh record from another host was taken over")
            return
        }
        #expect(held.record?.host == "host-b")
        #expect(owners.records.read("fresh.json")?.record?.host == "host-b", "left as it was")
        // A claim from incoming/ won the rename: whatever record was there is left over.
        let claimed = try owners.take("fresh.json", origin: .incoming).get()
        #expect(owners.records.read("fresh.json")?.record?.isThisProcess == true)
        owners.release(claimed)
        #expect(owners.records.read("fresh.json") == nil, "removed when the job ends")

        for name in ["expired.json", "here.json", "none.json"] {
            let taken = try owners.take(name, origin: .orphan).get()
            #expect(owners.records.read(name)?.record?.isThisProcess == true, "\(name)")
            owners.release(taken)
        }
        #expect(owners.records.entries().isEmpty, "no temporary files left: \(owners.records.entries())")
    }

    @Test("the heartbeat refreshes the record; an owner whose record was taken over loses the job")
    func heartbeat() throws {
        let dir = TempDir()
        let owners = try spoolOwners(in: dir, lease: 2)     // a beat every 0.5 s
        let ownership = try owners.take("job.json", origin: .incoming).get()
        let first = try #require(owners.records.read("job.json")?.record?.heartbeat)
        eventually("the owner's heartbeat to move past \(first)", timeout: 5) { (owners.records.read("job.json")?.record?.heartbeat ?? first) > first }
        #expect(!ownership.isLost)

        owners.records.replace("job.json", with: record(host: "host-c", age: 0))
        eventually("the owner to notice host-c's record", timeout: 5) { ownership.isLost }
        #expect(ownership.lostTo == "host-c")
        owners.release(ownership)
        #expect(owners.records.read("job.json")?.record?.host == "host-c", "the new owner's record stays")
    }

    @Test("records of jobs no longer in active/ go once expired")
    func sweep() throws {
        let dir = TempDir()
        let owners = try spoolOwners(in: dir, lease: 2, holding: [
            ("gone.json", "host-b", 10), ("running.json", "host-b", 10), ("young.json", "host-b", 0),
        ])
        let old = timeval(tv_sec: time(nil) - 60, tv_usec: 0)
        for name in ["gone.json", "running.json", "young.json"] { utimes(owners.records.path(name), [old, old]) }
        owners.sweep(active: ["running.json"])
        #expect(Set(owners.records.entries().map(\.name)) == ["running.json", "young.json"])
    }

    /// Eight takers at once on one expired record, 200 times: each time exactly one gets it.
    @Test("of several takers of one expired record, exactly one wins")
    func takeoverRace() throws {
        let dir = TempDir()
        let spool = try Spool(root: dir.url.appendingPathComponent("s"))
        let folder = OwnerRecordFolder(spool: spool)
        mkdir(folder.directory.path, 0o700)
        for round in 0..<200 {
            let name = "job\(round).json"
            folder.replace(name, with: record(host: "dead-host", age: 120))
            let stale = try #require(folder.read(name)).bytes
            let winners = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { i in
                let mine = OwnerRecord(host: "host-\(i)", pid: 1, instance: "taker-\(i)", heartbeat: Date())
                if folder.remove(name, ifStill: stale, by: mine.instance), folder.create(name, with: mine) {
                    winners.add(1, ordering: .relaxed)
                }
            }
            #expect(winners.load(ordering: .relaxed) == 1, "round \(round)")
            #expect(folder.read(name)?.record?.instance.hasPrefix("taker-") == true)
        }
        #expect(folder.entries().allSatisfy { !$0.name.hasPrefix(".") }, "no temporary files left")
    }
}
