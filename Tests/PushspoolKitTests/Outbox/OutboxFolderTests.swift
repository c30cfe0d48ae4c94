import Foundation
import Testing
@testable import PushspoolKit

/// The outbox's folder in a fresh temporary directory: records written whole into `pending/`
/// (no temporary left there or beside), listed in name order, removed; failed ones appended to
/// `failed/`; an outbox that gives nothing up has no `failed/`.
@Suite struct OutboxFolderTests {
    @Test func recordsAreWrittenWholeListedAndRemoved() throws {
        let dir = TempDir("pushspool-outbox-folder")
        let folder = try OutboxFolder(root: dir.url.appendingPathComponent("hub"), keepsFailed: false)
        try folder.write(Array("b".utf8), name: "b", mode: 0o600)
        try folder.write(Array("a1".utf8), name: "a", mode: 0o600)
        try folder.write(Array("a2".utf8), name: "a", mode: 0o600)
        #expect(folder.names() == ["a", "b"])
        #expect(dir.read("hub/pending/a") == "a2")
        // The temporaries were renamed away: nothing but the two folders is left in hub/.
        #expect(dir.list("hub").sorted() == ["pending"])
        let mode = (try FileManager.default.attributesOfItem(atPath: dir.path("hub/pending/a"))[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        folder.remove("a")
        #expect(folder.names() == ["b"])
        #expect(throws: FileIO.Failure.self) { try folder.keepFailed([1], name: "x", mode: 0o640) }
    }

    @Test func failedRecordsAreAppendedAndOnlyMatchingNamesListed() throws {
        let dir = TempDir("pushspool-outbox-folder")
        let root = dir.url.appendingPathComponent("webhooks")
        let folder = try OutboxFolder(root: root, temporaries: root.appendingPathComponent("tmp"), keepsFailed: true, permissions: 0o750)
        try folder.write(Array("{}\n".utf8), name: "1.jsonl", mode: 0o640)
        dir.write("webhooks/pending/notes.txt", "x")
        #expect(folder.names(suffix: ".jsonl") == ["1.jsonl"])
        #expect(dir.list("webhooks/tmp").isEmpty)
        try folder.keepFailed(Array("one\n".utf8), name: "1.jsonl", mode: 0o640)
        try folder.keepFailed(Array("two\n".utf8), name: "1.jsonl", mode: 0o640)
        #expect(dir.read("webhooks/failed/1.jsonl") == "one\ntwo\n")
    }
}
