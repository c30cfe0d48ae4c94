import Foundation
import Testing

/// Issue 24 item 9: `submit` refuses an id that already ran (exit 65, naming its result log)
/// unless `--allow-duplicate`; `import`'s summary counts the handles it moved and names a few.
@Suite struct SubmitImportSummaryTests {
    @Test("submit of a completed id: exit 65 naming the log; --allow-duplicate writes it, the run sends nothing")
    func completedID() throws {
        let (dir, spool) = try initializedSpool("pushspool-submit")
        let job = ["submit", "--broadcast", "--pns", "fcm", "--message", "hi", "--id", "once"] + spool
        #expect(try runPushspool(job).status == 0)
        #expect(try runPushspool(["run", "--once"] + spool).status == 0)
        let again = try runPushspool(job)
        #expect(again.status == 65, "\(again.stdout) \(again.stderr)")
        #expect(again.stderr.contains("submit: job once already ran (done); its result log is \(dir.path("spool"))/results/once.jsonl"), "\(again.stderr)")
        #expect(again.stderr.contains("--allow-duplicate"), "\(again.stderr)")
        #expect(dir.list("spool/incoming").isEmpty)
        let forced = try runPushspool(job + ["--allow-duplicate"])
        #expect(forced.status == 0, "\(forced.stderr)")
        let run = try runPushspool(["run", "--once"] + spool)
        #expect(run.stdout.contains("duplicate"), "\(run.stdout)")
        // An id that never ran, or still runs, is taken as before.
        #expect(try runPushspool(["submit", "--broadcast", "--pns", "fcm", "--message", "hi", "--id", "fresh"] + spool).status == 0)
    }

    @Test("import counts the handles it moved to another id and names the first few")
    func importMoves() throws {
        let (dir, spool) = try initializedSpool("pushspool-import")
        dir.write("first.jsonl", (1...5).map { #"{"id": "old-\#($0)", "platform": "fcm", "handle": "tok-\#($0)", "tags": ["t"]}"# }
            .joined(separator: "\n") + "\n")
        #expect(try runPushspool(["import", dir.path("first.jsonl")] + spool).status == 0)
        // Four handles change hands, one device is new, one stays.
        dir.write("second.jsonl", ((1...4).map { #"{"id": "new-\#($0)", "platform": "fcm", "handle": "tok-\#($0)", "tags": ["t"]}"# }
            + [#"{"id": "old-5", "platform": "fcm", "handle": "tok-5", "tags": ["u"]}"#,
               #"{"id": "new-6", "platform": "fcm", "handle": "tok-6", "tags": ["t"]}"#]).joined(separator: "\n") + "\n")
        let r = try runPushspool(["import", dir.path("second.jsonl")] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("imported 6 devices, moved 4 handles to another id (old-1 → new-1, old-2 → new-2, old-3 → new-3, …)"), "\(r.stdout)")
        let count = try runPushspool(["devices", "--count"] + spool)
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "6")
        // Nothing moved: nothing said about it.
        let same = try runPushspool(["import", dir.path("second.jsonl")] + spool)
        #expect(same.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "imported 6 devices", "\(same.stdout)")
    }
}
