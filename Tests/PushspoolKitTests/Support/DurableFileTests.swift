import Foundation
@testable import PushspoolKit
import Synchronization
import Testing

/// The one durable write (`DurableFile`) under job drops, hub marks and webhook batches, in a
/// temporary folder: what each step leaves behind when it fails.
@Suite struct DurableFileTests {
    struct SyncFailed: Error, CustomStringConvertible { var description: String { "EIO (injected)" } }

    @Test func aFileLandsWholeAndItsFolderIsSyncedOncePerGroup() throws {
        let dir = TempDir("durable")
        let synced = Mutex<[String]>([])
        let file = DurableFile { url in synced.withLock { $0.append(url.lastPathComponent) } }
        let items = (0..<3).map { i in
            DurableFile.Item(bytes: Array("f\(i)\n".utf8), temporary: dir.url.appendingPathComponent(".f\(i).tmp"),
                             destination: dir.url.appendingPathComponent("out/f\(i)"))
        }
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("out"), withIntermediateDirectories: true)
        let group = file.write(items, mode: 0o640, placement: .neverReplacing)
        #expect(group.folderFailure == nil)
        for (i, placed) in group.files.enumerated() {
            guard case .renamed(let identity?) = placed else { Issue.record("f\(i): \(placed)"); continue }
            // Its identity is the file now at its name, and no other.
            #expect(identity.matches(dir.path("out/f\(i)")) && !identity.matches(dir.path("out/f\((i + 1) % 3)")))
        }
        #expect(dir.list("out") == ["f0", "f1", "f2"] && dir.read("out/f1") == "f1\n")
        #expect(synced.withLock { $0 } == ["out"])
        #expect(dir.list("").filter { $0.hasSuffix(".tmp") }.isEmpty)
    }

    @Test func neverReplacingLeavesTheWaitingFileAndNoTemporary() throws {
        let dir = TempDir("durable")
        dir.write("x", "theirs\n")
        let target = dir.url.appendingPathComponent("x")
        #expect(throws: FileIO.Failure.self) {
            try DurableFile().write(Array("mine\n".utf8), to: target, temporary: DurableFile.temporary(for: target), mode: 0o640,
                                    placement: .neverReplacing)
        }
        #expect(dir.read("x") == "theirs\n" && dir.list("") == ["x"])
        // Replacing takes its place.
        try DurableFile().write(Array("mine\n".utf8), to: target, temporary: DurableFile.temporary(for: target), mode: 0o640)
        #expect(dir.read("x") == "mine\n" && dir.list("") == ["x"])
    }

    @Test func aFailedFolderFsyncIsReportedWithTheRenameDone() throws {
        let dir = TempDir("durable")
        let target = dir.url.appendingPathComponent("x")
        let failing = DurableFile { _ in throw SyncFailed() }
        do {
            try failing.write(Array("x\n".utf8), to: target, temporary: DurableFile.temporary(for: target), mode: 0o640)
            Issue.record("a failed folder fsync was not reported")
        } catch {
            #expect(error.description == "EIO (injected)")
        }
        // Done but not known durable: what to undo is the caller's (the drop takes its job back).
        #expect(dir.read("x") == "x\n" && dir.list("") == ["x"])
    }

    @Test func aFileThatCannotBeWrittenLeavesNothing() throws {
        let dir = TempDir("durable")
        let target = dir.url.appendingPathComponent("gone/x")
        let group = DurableFile().write([DurableFile.Item(bytes: [1], temporary: dir.url.appendingPathComponent("gone/.x.tmp"), destination: target),
                                         DurableFile.Item(bytes: [2], temporary: dir.url.appendingPathComponent(".y.tmp"), destination: target)],
                                        mode: 0o640, placement: .replacing)
        guard case .failed(.write) = group.files[0] else { Issue.record("expected a write failure, got \(group.files[0])"); return }
        guard case .failed(.rename) = group.files[1] else { Issue.record("expected a rename failure, got \(group.files[1])"); return }
        #expect(dir.list("").isEmpty)
    }
}
