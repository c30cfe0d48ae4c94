import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// The bounded listing a flood is taken with: counts everything, keeps only the oldest few.
@Suite struct FolderScanTests {
    /// 60 jobs with distinct ages (shuffled names), strays and an unsafe name.
    static func folder() throws -> TempDir {
        let dir = TempDir("pushspool-scan")
        let base = Date().addingTimeInterval(-10_000)
        for i in (0..<60).shuffled() {
            let name = "job-\(String(format: "%02d", (i * 37) % 60)).json"
            dir.write("f/\(name)", "{}")
            try FileManager.default.setAttributes([.modificationDate: base.addingTimeInterval(Double(i))], ofItemAtPath: dir.path("f/\(name)"))
        }
        dir.write("f/Welcome.JSON", "{}")
        dir.write("f/notes.txt", "x")
        dir.write("f/.hidden.json", "{}")
        try FileManager.default.createDirectory(atPath: dir.path("f/sub"), withIntermediateDirectories: false)
        let unsafe = dir.path("f/bad\u{1}.json")
        close(open(unsafe, O_CREAT | O_WRONLY, 0o600))
        return dir
    }

    /// The name of the i-th oldest job above.
    static func name(_ i: Int) -> String { "job-\(String(format: "%02d", (i * 37) % 60)).json" }

    @Test func keepsTheOldestInOrderAndCountsEverything() throws {
        let dir = try Self.folder()
        let scan = try #require(FolderScan(dir.path("f"), limit: 10))
        #expect(scan.jobs == 60)
        #expect(scan.oldest.map(\.name) == (0..<10).map(Self.name))
        #expect(scan.strays == 2)
        #expect(scan.strayNames == ["Welcome.JSON", "notes.txt"])
        #expect(scan.unsafe.count == 1)
        let oldest = try #require(scan.oldestModified)
        #expect(abs(oldest - Date().addingTimeInterval(-10_000).timeIntervalSince1970) < 60)
    }

    @Test func keepsTheNewestFirstWhenAsked() throws {
        let dir = try Self.folder()
        let scan = try #require(FolderScan(dir.path("f"), limit: 5, newest: true))
        #expect(scan.oldest.map(\.name) == (55..<60).reversed().map(Self.name))
    }

    @Test func skippedJobsAreCountedButLeftOutOfTheBatch() throws {
        let dir = try Self.folder()
        let skipped = Set((0..<20).map(Self.name))
        let scan = try #require(FolderScan(dir.path("f"), limit: 10) { name, _ in skipped.contains(name) })
        #expect(scan.jobs == 60)
        #expect(scan.oldest.map(\.name) == (20..<30).map(Self.name))
    }

    @Test func countingOnlyDatesNothing() throws {
        let dir = try Self.folder()
        let scan = try #require(FolderScan(dir.path("f"), limit: 0, dated: false))
        #expect(scan.jobs == 60)
        #expect(scan.oldest.isEmpty)
        #expect(scan.oldestModified == nil)
    }

    /// A scan with a time budget stops when it runs out (checked every 4096 names) and says its
    /// count is a lower bound; without one it counts everything.
    @Test func aBudgetStopsTheScanAndSaysSo() throws {
        let dir = TempDir("pushspool-scan-budget")
        try FileManager.default.createDirectory(atPath: dir.path("f"), withIntermediateDirectories: false)
        for i in 0..<10_000 { close(open(dir.path("f/j\(i).json"), O_CREAT | O_WRONLY, 0o600)) }
        let cut = try #require(FolderScan(dir.path("f"), limit: 0, dated: false, budget: 0))
        #expect(!cut.complete)
        #expect(cut.jobs > 0 && cut.jobs < 10_000, "\(cut.jobs)")
        let whole = try #require(FolderScan(dir.path("f"), limit: 0, dated: false, budget: 60))
        #expect(whole.complete && whole.jobs == 10_000)
        let unbounded = try #require(FolderScan(dir.path("f"), limit: 0, dated: false))
        #expect(unbounded.complete && unbounded.jobs == 10_000)
    }
}
