import Dispatch
import Foundation
@testable import PushspoolKit
import Synchronization
import Testing

/// The group commit under `serve`'s job submissions, on a real spool in a temporary folder.
@Suite struct JobIntakeTests {
    static func submitAll(_ intake: JobIntake, _ jobs: [(String, String)]) -> [String: JobIntake.Outcome] {
        let outcomes = Mutex<[String: JobIntake.Outcome]>([:])
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: jobs.count) { i in
            group.enter()
            intake.submit(Array(jobs[i].1.utf8), name: jobs[i].0) { outcome in
                outcomes.withLock { $0[jobs[i].0] = outcome }
                group.leave()
            }
        }
        group.wait()
        return outcomes.withLock { $0 }
    }

    @Test func concurrentJobsShareFsyncGroupsAndAllLand() throws {
        let dir = TempDir("intake")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"), create: true)
        let intake = JobIntake(spool: spool)
        let jobs = (0..<300).map { ("j\($0).json", #"{"id": "j\#($0)"}"# + "\n") }
        let outcomes = Self.submitAll(intake, jobs)
        #expect(outcomes.count == 300 && outcomes.values.allSatisfy { $0 == .queued })
        #expect(dir.list("spool/incoming").count == 300 && dir.list("spool/tmp").isEmpty)
        #expect(dir.read("spool/incoming/j7.json") == #"{"id": "j7"}"# + "\n")
        #expect(intake.jobsWritten == 300)
        #expect(intake.groupsWritten < 300, "300 concurrent jobs took \(intake.groupsWritten) groups: nothing was grouped")
        // A name already waiting is never replaced.
        #expect(Self.submitAll(intake, [("j7.json", "other")])["j7.json"] == .exists)
        #expect(dir.read("spool/incoming/j7.json") == #"{"id": "j7"}"# + "\n")
    }

    @Test func aJobThatCannotBeWrittenLeavesNothing() throws {
        let dir = TempDir("intake")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"), create: true)
        try FileManager.default.removeItem(atPath: dir.path("spool/tmp"))
        let outcome = Self.submitAll(JobIntake(spool: spool), [("x.json", "{}")])["x.json"]
        guard case .failed(let why)? = outcome else { Issue.record("expected a failure, got \(String(describing: outcome))"); return }
        #expect(why.contains("tmp/"))
        #expect(dir.list("spool/incoming").isEmpty)
    }
}

/// The one durable drop (`JobIntake.Drop`) under `submit`, the job API and the tutorial API:
/// the same failure rules for all, a failed fsync leaving nothing half-done, and nobody else's
/// file removed.
@Suite struct DurableDropTests {
    struct SyncFailed: Error, CustomStringConvertible { var description: String { "EIO (injected)" } }

    static func spool(_ dir: TempDir) throws -> Spool { try Spool(root: dir.url.appendingPathComponent("spool"), create: true) }

    @Test func submitAndTheIntakeShareOneDrop() throws {
        let dir = TempDir("drop")
        let spool = try Self.spool(dir)
        try spool.submit(Array("a\n".utf8), name: "a.json")
        // The intake sees what submit wrote as waiting, and submit what the intake wrote.
        #expect(JobIntakeTests.submitAll(JobIntake(spool: spool), [("a.json", "b\n")])["a.json"] == .exists)
        #expect(JobIntakeTests.submitAll(JobIntake(spool: spool), [("c.json", "c\n")])["c.json"] == .queued)
        #expect(throws: SpoolError.self) { try spool.submit(Array("x".utf8), name: "c.json") }
        #expect(dir.read("spool/incoming/a.json") == "a\n" && dir.read("spool/incoming/c.json") == "c\n")
        #expect(dir.list("spool/tmp").isEmpty)
    }

    @Test func aFailedDirectoryFsyncTakesTheJobBackAndLeavesNothing() throws {
        let dir = TempDir("drop")
        let spool = try Self.spool(dir)
        let drop = JobIntake.Drop(spool: spool) { _ in throw SyncFailed() }
        let outcomes = drop.write([(Array("x\n".utf8), "x.json"), (Array("y\n".utf8), "y.json")])
        for o in outcomes {
            guard case .failed(let why) = o else { Issue.record("expected a failure, got \(o)"); continue }
            #expect(why == "cannot make incoming/ durable: EIO (injected); nothing was queued")
        }
        #expect(dir.list("spool/incoming").isEmpty && dir.list("spool/tmp").isEmpty)
        // submit reports it the same way.
        let failing = JobIntake(drop: drop)
        #expect(JobIntakeTests.submitAll(failing, [("z.json", "z")])["z.json"] != .queued)
        #expect(dir.list("spool/incoming").isEmpty && dir.list("spool/tmp").isEmpty)
    }

    @Test("a failed fsync never removes a same-named job another writer dropped after a dispatcher claimed this one")
    func anotherWritersJobIsNeverRemoved() throws {
        let dir = TempDir("drop")
        let spool = try Self.spool(dir)
        let incoming = spool.url(.incoming, "x.json").path, active = spool.url(.active, "x.json").path
        let drop = JobIntake.Drop(spool: spool) { _ in
            // Meanwhile: a dispatcher claims this drop's x.json, another writer drops its own x.json.
            rename(incoming, active)
            FileManager.default.createFile(atPath: incoming, contents: Data("theirs\n".utf8))
            throw SyncFailed()
        }
        let outcome = drop.write([(Array("mine\n".utf8), "x.json")])[0]
        #expect(outcome == .failed("cannot make incoming/ durable: EIO (injected); a dispatcher had already taken it"))
        #expect(dir.read("spool/incoming/x.json") == "theirs\n")
        #expect(dir.read("spool/active/x.json") == "mine\n")
        #expect(dir.list("spool/tmp").isEmpty)
    }
}
