import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The registry contract throws `RegistryError` only, on both backends: a caller reads the
/// error's `kind` and message straight from `catch`, without a downcast (these tests compile only
/// because the methods declare `throws(RegistryError)`).
@Suite struct RegistryTypedErrorTests {
    @Test(arguments: RegistryBackend.allCases) func refusalsAndClosedAreTyped(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        var invalid = RegistryFixture.reg("a", .fcm, "t1")
        invalid.handle = ""
        do {
            try registry.upsert(invalid, now: Date())
            Issue.record("an empty handle was accepted")
        } catch {
            #expect(error.kind == .refused)
            #expect(error.message.hasPrefix("handle"), "\(error.message)")
        }
        registry.close()
        do {
            _ = try registry.device(id: "a")
            Issue.record("a closed registry answered")
        } catch {
            #expect(error.kind == .refused)
            #expect(error.message.contains("closed"), "\(error.message)")
        }
    }

    /// Job claims and import are contracts of their own, reached with the same typed error.
    @Test(arguments: RegistryBackend.allCases) func claimsAndImportAreSeparateContracts(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        let claims: any JobClaims = registry
        #expect(try claims.claimJob(id: "job-1", owner: "host-a:/spool"))
        let importer: any RegistryImporter = registry
        do {
            _ = try importer.importJSONL(contentsOf: dir.url.appendingPathComponent("missing.jsonl"))
            Issue.record("a missing file was imported")
        } catch {
            #expect(error.kind == .refused)
            #expect(error.message.hasPrefix("cannot read"), "\(error.message)")
        }
    }
}
