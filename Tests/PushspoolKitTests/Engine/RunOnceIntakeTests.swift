import Foundation
import Testing

/// What `run --once` does with everything it finds in the spool: leftovers in `tmp/`, files that
/// are still being written, files that are not jobs, invalid jobs and their result logs.
@Suite struct RunOnceIntakeTests {
    /// Maildir readers remove `tmp/` files older than 36 h; a fresh one may be a writer at work.
    @Test func runRemovesTemporariesOlderThan36HoursAndKeepsFreshOnes() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        dir.write("spool/tmp/.old.json.1.tmp", "{")
        dir.write("spool/tmp/.fresh.json.2.tmp", "{")
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-37 * 3600)],
                                              ofItemAtPath: dir.path("spool/tmp/.old.json.1.tmp"))
        let r = try runPushspool(["run", "--once"] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(dir.list("spool/tmp") == [".fresh.json.2.tmp"])
    }
}
