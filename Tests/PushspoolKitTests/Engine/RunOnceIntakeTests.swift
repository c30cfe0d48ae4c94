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

extension RunOnceIntakeTests {
    /// Issue: `upload-3f9.json` holding `"id": "promo-77"` with a bad platform was logged as
    /// `results/upload-3f9.jsonl`, so a producer waiting for `results/promo-77.jsonl` waited for ever.
    @Test func anInvalidJobIsLoggedUnderItsOwnIdWhenItHasAReadableOne() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        dir.write("spool/incoming/upload-3f9.json", #"{"id": "promo-77", "to_tag": "a", "pns": ["bogus"], "message": "m"}"#)
        dir.write("spool/incoming/upload-4a0.json", #"{"id": "../x", "to_tag": "a", "pns": ["fcm"], "message": "m"}"#)
        let r = try runPushspool(["run", "--once"] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(dir.list("spool/results") == ["promo-77.jsonl", "upload-4a0.jsonl"])
        let log = dir.jsonLines("spool/results/promo-77.jsonl")
        #expect(log.first?["id"] as? String == "promo-77")
        #expect(log.first?["file"] as? String == "upload-3f9.json")
        #expect(log.last?["status"] as? String == "failed")
        #expect(dir.list("spool/failed") == ["upload-3f9.json", "upload-4a0.json"])
    }

    /// An invalid file never writes into the log of another job with its id: a finished job's
    /// log stays as it was (so a later re-drop is still a duplicate), the invalid one gets its own.
    @Test func anInvalidJobNeverWritesIntoTheLogOfAnotherJobWithItsId() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        #expect(try runPushspool(["submit", "--to-tag", "a", "--pns", "fcm", "--message", "m", "--id", "promo-77"] + spool).status == 0)
        #expect(try runPushspool(["run", "--once"] + spool).status == 0)
        let finished = dir.read("spool/results/promo-77.jsonl")
        dir.write("spool/incoming/upload-3f9.json", #"{"id": "promo-77", "to_tag": "a", "pns": ["bogus"], "message": "m"}"#)
        #expect(try runPushspool(["run", "--once"] + spool).status == 0)
        #expect(dir.read("spool/results/promo-77.jsonl") == finished)
        let invalid = dir.list("spool/results").filter { $0.hasPrefix("promo-77.invalid-") }
        #expect(invalid.count == 1)
        #expect(dir.jsonLines("spool/results/\(invalid.first ?? "")").last?["status"] as? String == "failed")
        #expect(!dir.list("spool/results").contains("upload-3f9.jsonl"))
    }

    /// Issue: a truncated file was quarantined as `invalid JSON at byte 51: expected a string key`.
    @Test func aTruncatedJobSaysTruncated() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        let cut = #"{"id": "promo-78", "to_tag": "username:alice", "pns": ["fcm"],"#
        dir.write("spool/incoming/cut.json", cut)
        // Old enough not to be taken for a file still being written.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-60)], ofItemAtPath: dir.path("spool/incoming/cut.json"))
        let r = try runPushspool(["run", "--once"] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        let error = dir.jsonLines("spool/results/cut.jsonl").last?["error"] as? String
        #expect(error == "invalid JSON at byte \(cut.utf8.count): truncated (ends inside an object)")
    }
}

extension RunOnceIntakeTests {
    /// Issue: a half-written file younger than 2 s was left for a later run without a word, and
    /// `run --once` said `nothing due`. It waits out the settle time, then quarantines it.
    @Test func runOnceWaitsOutTheSettleTimeOfAFreshHalfWrittenFileThenQuarantinesIt() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        dir.write("spool/incoming/half.json", #"{"id": "half", "to_tag": "username:alice", "pns": ["#)
        let r = try runPushspool(["run", "--once"] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("nothing due"), "\(r.stdout)")
        #expect(dir.list("spool/incoming").isEmpty)
        #expect(dir.list("spool/failed") == ["half.json"])
        #expect(dir.jsonLines("spool/results/half.jsonl").last?["error"] as? String
                == "invalid JSON at byte 51: truncated (ends inside an array)")
    }

    /// A file completed while `run --once` waits for it is run, not quarantined.
    @Test func aFileCompletedDuringTheSettleTimeIsRun() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        dir.write("spool/incoming/slow.json", #"{"id": "slow", "to_tag": "username:alice", "#)
        // A whole job beside it: once that one is done, run --once has listed incoming/ and is
        // waiting for the half-written one to settle.
        dir.write("spool/incoming/whole.json", #"{"id": "whole", "to_tag": "username:alice", "pns": ["fcm"], "message": "m"}"#)
        let run = try startPushspool(["run", "--once"] + spool)
        eventually("the whole job to be done", timeout: 30) { dir.list("spool/done") == ["whole.json"] }
        // Written in place, as a careless producer would (no tmp/ + rename).
        let handle = try FileHandle(forWritingTo: dir.url.appendingPathComponent("spool/incoming/slow.json"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#""pns": ["fcm"], "message": "m"}"#.utf8))
        try handle.close()
        run.waitUntilExit()
        #expect(run.terminationStatus == 0)
        #expect(dir.list("spool/done") == ["slow.json", "whole.json"])
        #expect(dir.jsonLines("spool/results/slow.jsonl").last?["status"] as? String == "done")
    }

    /// Issue: `Welcome.JSON` and `welcome.txt` in `incoming/` were ignored for ever, and
    /// `status` showed `incoming 0`.
    @Test func filesInIncomingThatAreNotJobsAreWarnedAboutAndCounted() throws {
        let dir = TempDir("pushspool-intake")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        dir.write("spool/incoming/Welcome.JSON", #"{"to_tag": "a", "pns": "fcm", "message": "m"}"#)
        dir.write("spool/incoming/welcome.txt", "hello")
        dir.write("spool/incoming/.hidden.json", "{}")       // names starting with '.' are ignored by design
        let r = try runPushspool(["run", "--once"] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("incoming/Welcome.JSON is not a job"), "\(r.stderr)")
        #expect(r.stderr.contains("incoming/welcome.txt is not a job"), "\(r.stderr)")
        #expect(!r.stderr.contains(".hidden.json"))
        #expect(dir.list("spool/incoming") == [".hidden.json", "Welcome.JSON", "welcome.txt"])

        let status = try runPushspool(["status"] + spool)
        #expect(status.stdout.contains("  incoming  0, 2 files that are not jobs\n"), "\(status.stdout)")
        let json = try runPushspool(["status", "--json"] + spool)
        let doc = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let incoming = (doc?["folders"] as? [String: Any])?["incoming"] as? [String: Any]
        #expect(incoming?["count"] as? Int == 0)
        #expect(incoming?["not_jobs"] as? Int == 2)
    }
}
