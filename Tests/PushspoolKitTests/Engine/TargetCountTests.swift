import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

/// The targets a send job's line announces come from the registry's count of its audience: a
/// registry that cannot count is an error, never an audience of 0.
@Suite struct TargetCountTests {
    @Test("a registry error while counting leaves the job in active/ to resume, with no job line announcing 0 targets")
    func registryErrorIsNoZeroTargets() throws {
        let h = try EngineHarness()
        try h.register("d1", .fcm, tags: ["a"])
        // The device tables gone: the count fails while the id's claim (no table) still answers.
        try h.registry.locked { db in
            try db.execute("DROP TABLE device_tags")
            try db.execute("DROP TABLE devices")
        }
        try h.drop("c.json", #"{"id":"c1","tags":"a","pns":"fcm","message":"m"}"#)
        let reports = h.runOnce(ScriptedProvider())
        guard case .interrupted(.registry(let detail))? = reports.first?.outcome else {
            Issue.record("expected the job left in active/ for a registry error, got \(reports.map(\.description))")
            return
        }
        #expect(detail.contains("no such table"))
        #expect(h.list(.active) == ["c.json"])
        #expect(!h.records("c1").contains { if case .job = $0 { true } else { false } }, "a job line announced targets the registry never counted")
    }
}
