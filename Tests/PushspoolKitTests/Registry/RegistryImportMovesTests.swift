import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Issue 24 item 9: `import` counts the handles it moved from one installation id to another and
/// names the first few, on both registries and on both of PostgreSQL's paths (the set-based
/// merge, and line by line when the file names a handle twice).
@Suite struct RegistryImportMovesTests {
    static func lines(_ pairs: [(String, String)]) -> String {
        pairs.map { #"{"id": "\#($0.0)", "platform": "fcm", "handle": "\#($0.1)", "tags": ["t"]}"# }.joined(separator: "\n") + "\n"
    }

    @Test(arguments: RegistryBackend.allCases)
    func movesAreCountedAndNamed(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        dir.write("first.jsonl", Self.lines((1...5).map { ("old-\($0)", "tok-\($0)") }))
        let first = try registry.importJSONL(contentsOf: URL(fileURLWithPath: dir.path("first.jsonl")))
        #expect(first.moved == 0)
        dir.write("second.jsonl", Self.lines((1...4).map { ("new-\($0)", "tok-\($0)") } + [("old-5", "tok-5"), ("new-6", "tok-6")]))
        let second = try registry.importJSONL(contentsOf: URL(fileURLWithPath: dir.path("second.jsonl")))
        #expect(second.imported == 6)
        #expect(second.moved == 4)
        #expect(second.firstMoves == ["old-1 → new-1", "old-2 → new-2", "old-3 → new-3"])
        // One handle named twice in the file: the second line takes it from the first.
        dir.write("third.jsonl", Self.lines([("x-1", "tok-9"), ("x-2", "tok-9")]))
        let third = try registry.importJSONL(contentsOf: URL(fileURLWithPath: dir.path("third.jsonl")))
        #expect(third.moved == 1 && third.firstMoves == ["x-1 → x-2"], "\(third.firstMoves)")
    }
}
