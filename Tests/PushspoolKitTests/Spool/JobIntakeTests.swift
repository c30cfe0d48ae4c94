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
