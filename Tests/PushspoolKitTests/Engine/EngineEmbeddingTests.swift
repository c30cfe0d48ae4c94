import Foundation
import Testing
// Deliberately not @testable: this is what a program embedding the engine can reach.
import PushspoolKit
import Synchronization

/// The engine is embeddable from outside the package: built from a `Config` through the public
/// `Engine`, it runs a sandbox job and its result can be read back, with public API only.
@Suite struct EngineEmbeddingTests {
    @Test func aProgramOutsideThePackageRunsOneSandboxJob() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-embed-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let spool = try Spool(root: root)
        var config = Config()
        config.spool = root.path
        config.registry = root.appendingPathComponent("registry.sqlite").path
        let reports = Reports()
        let engine = try Engine(config: config, spool: spool,
                                hooks: Engine.Hooks(log: Log(minimum: .error), report: { reports.add($0) }))
        _ = try engine.registry.upsert(Registration(id: "alice-pixel", platform: .fcm, handle: "fcm-token-alice", tags: ["username:alice"]))
        try spool.submit(Array(#"{"id":"hello","to_tag":"username:alice","pns":"gcm","message":"hi"}"#.utf8), name: "hello.json")
        engine.runOnce()
        engine.shutdown()
        #expect(reports.all.map(\.id) == ["hello"])
        #expect(reports.all.first.map { "\($0)" }?.contains("delivered 1, failed 0") == true, "\(reports.all)")
        #expect(spool.jobs(in: .done) == ["hello.json"])
        let log = try String(contentsOf: spool.url(.results, "hello.jsonl"), encoding: .utf8)
        #expect(log.contains(#""device":"alice-pixel""#) && log.contains(#""status":"delivered""#), "\(log)")
    }
}

private final class Reports: Sendable {
    private let list = Mutex<[JobReport]>([])
    func add(_ r: JobReport) { list.withLock { $0.append(r) } }
    var all: [JobReport] { list.withLock { $0 } }
}
