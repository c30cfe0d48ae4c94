import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Which dispatcher runs each job in `active/` (`.state/owners/`): `status` finds a running job's
/// dispatcher, and so its heartbeat, through it.
@Suite struct JobOwnersTests {
    @Test("a record round-trips through its JSON; one an earlier release wrote (with its host) still reads")
    func roundTrip() throws {
        let r = DispatcherRecord(pid: 77, instance: "abc", heartbeat: Date(timeIntervalSince1970: 1_800_000_000.123))
        let back = try #require(DispatcherRecord(r.encoded()))
        #expect(back.pid == r.pid && back.instance == r.instance)
        #expect(abs(back.heartbeat.timeIntervalSince(r.heartbeat)) < 0.001, "milliseconds kept")
        #expect(DispatcherRecord(Array("{}".utf8)) == nil)
        let earlier = #"{"host": "host-b", "pid": 4242, "instance": "ghost", "heartbeat_at": "2026-11-26T18:00:00.000Z"}"#
        #expect(DispatcherRecord(Array(earlier.utf8))?.instance == "ghost")
    }

    @Test("a job taken names this process until it is released; another process's record is not removed")
    func takeAndRelease() throws {
        let dir = TempDir()
        let owners = JobOwners(spool: try Spool(root: dir.url.appendingPathComponent("s")))
        owners.take("job.json")
        #expect(owners.records.read("job.json")?.isThisProcess == true)
        #expect(owners.records.read("job.json")?.pid == getpid())
        owners.release("job.json")
        #expect(owners.records.read("job.json") == nil, "removed when the job ends")

        owners.records.replace("other.json", with: DispatcherRecord(pid: 4242, instance: "other", heartbeat: Date()))
        owners.release("other.json")
        #expect(owners.records.read("other.json")?.instance == "other", "another dispatcher's record stays")
        #expect(owners.records.entries().map(\.name) == ["other.json"], "no temporary files left: \(owners.records.entries())")
    }

    @Test("records of jobs no longer in active/ and leftover temporary files go once a minute old")
    func sweep() throws {
        let dir = TempDir()
        let owners = JobOwners(spool: try Spool(root: dir.url.appendingPathComponent("s")))
        for name in ["gone.json", "running.json", "young.json"] { owners.take(name) }
        let leftover = owners.records.path(".1234.crashed.tmp")
        #expect(FileManager.default.createFile(atPath: leftover, contents: Data("{".utf8)))
        let old = timeval(tv_sec: time(nil) - 90, tv_usec: 0)
        for path in ["gone.json", "running.json"].map(owners.records.path) + [leftover] { utimes(path, [old, old]) }
        owners.sweep(active: ["running.json"])
        #expect(Set(owners.records.entries().map(\.name)) == ["running.json", "young.json"])
    }

    @Test("a record's age is read on the injected clock's wall time")
    func sweepReadsTheInjectedClock() throws {
        let dir = TempDir()
        let spool = try Spool(root: dir.url.appendingPathComponent("s"))
        let later = EngineClock(now: { Date() }, secondsUntil: { $0.timeIntervalSinceNow }, wall: { Date().addingTimeInterval(120) })
        let owners = JobOwners(spool: spool, clock: later)
        for name in ["gone.json", "running.json"] { owners.take(name) }
        JobOwners(spool: spool).sweep(active: ["running.json"])
        #expect(Set(owners.records.entries().map(\.name)) == ["gone.json", "running.json"], "young on the system's clock")
        owners.sweep(active: ["running.json"])
        #expect(owners.records.entries().map(\.name) == ["running.json"], "two minutes old on the injected one")
    }
}
