import Foundation
import Testing
@testable import PushspoolKit

@Suite struct JobClaimOwnerTests {
    @Test func aSpoolKeepsOneOwnerAndTwoSpoolsNeverShareOne() throws {
        let dir = TempDir("claim-owner")
        let a = try Spool(root: dir.url.appendingPathComponent("a"))
        let b = try Spool(root: dir.url.appendingPathComponent("b"))
        let owner = JobClaimOwner.current(spool: a)
        #expect(JobClaimOwner.current(spool: a) == owner)
        #expect(JobClaimOwner.current(spool: try Spool(root: dir.url.appendingPathComponent("a"))) == owner)
        #expect(JobClaimOwner.current(spool: b) != owner)
        let id = try #require(JobClaimOwner.spoolID(a))
        #expect(owner.hasSuffix(" " + id) && UUID(uuidString: id) != nil)
        let mode = try FileManager.default.attributesOfItem(atPath: dir.path("a/.state/spool-id"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// Dispatchers starting together on a new spool agree on one identity (the file is created
    /// exclusively; the others read it).
    @Test func processesStartingTogetherAgreeOnTheSpoolsIdentity() throws {
        let dir = TempDir("claim-owner")
        let spool = try Spool(root: dir.url.appendingPathComponent("s"))
        let ids = Failures()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in ids.add(JobClaimOwner.spoolID(spool) ?? "none") }
        #expect(Set(ids.all).count == 1 && !ids.all.contains("none"))
    }
}
