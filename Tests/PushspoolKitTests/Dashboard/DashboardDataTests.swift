import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

/// What the dashboard reads from the spool, without a server: a result log's digest (outcomes
/// per second, what was not delivered by reason), read as it grows, and the campaign list's
/// filters and pages over many jobs.
@Suite struct DashboardDataTests {
    static func delivery(_ platform: String, _ status: String, at: String, code: String = "200", reason: String? = nil) -> String {
        #"{"type":"delivery","platform":"\#(platform)","provider":"p","app":"default","device":"d","status":"\#(status)","attempts":1,"code":"\#(code)","reason":\#(reason.map { "\"\($0)\"" } ?? "null"),"provider_id":null,"at":"\#(at)"}"#
    }

    @Test func aDigestReadsOnlyWhatWasAppendedAndGroupsWhatWasNotDelivered() throws {
        let dir = TempDir("pushspool-digest")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let url = spool.resultURL(jobID: "j")
        var lines = [#"{"type":"job","id":"j","file":"j.json","received_at":"2026-11-28T08:00:00.000Z","pns":["fcm"],"targets":6}"#]
        lines += (0..<3).map { Self.delivery("fcm", "delivered", at: "2026-11-28T08:00:0\($0).100Z") }
        // A last line still being written: not read until whole.
        try (lines.joined(separator: "\n") + "\n" + #"{"type":"deliv"#).write(to: url, atomically: false, encoding: .utf8)
        let digests = ResultLogDigests(spool: spool)
        var d = digests.digest(id: "j")
        #expect(d.targets == 6 && d.seconds.values.reduce(0) { $0 + $1.delivered } == 3 && d.failures.isEmpty)
        // The rest of that line and more arrive.
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        let rest = String(Self.delivery("fcm", "failed", at: "2026-11-28T08:00:05.000Z", code: "403", reason: "SENDER_ID_MISMATCH").dropFirst(14))
        try handle.write(contentsOf: Data((rest + "\n"
            + Self.delivery("fcm", "unregistered", at: "2026-11-28T08:00:05.500Z", code: "404", reason: "UNREGISTERED") + "\n"
            + Self.delivery("fcm", "failed", at: "2026-11-28T08:00:09.000Z", code: "403", reason: "SENDER_ID_MISMATCH") + "\n"
            + #"{"type":"summary","id":"j","status":"done","delivered":3,"failed":2,"unregistered":1,"retries":0,"duration_ms":9000}"# + "\n").utf8))
        try handle.close()
        d = digests.digest(id: "j")
        #expect(d.summary?.failed == 2)
        #expect(d.failures == [
            ResultLogDigest.FailureKey(platform: "fcm", status: "failed", code: "403", reason: "SENDER_ID_MISMATCH"): 2,
            ResultLogDigest.FailureKey(platform: "fcm", status: "unregistered", code: "404", reason: "UNREGISTERED"): 1,
        ])
        // Ten seconds in one-second buckets, from the lines' own times (so a finished job keeps its curve).
        let s = d.series()
        #expect(s.step == 1 && s.buckets.count == 10)
        #expect(s.buckets.map(\.delivered) == [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
        #expect(s.buckets.map { $0.failed + $0.unregistered } == [0, 0, 0, 0, 0, 2, 0, 0, 0, 1])
        // A log replaced by another (a job id sent again after its log was set aside) is read from its start.
        try (Self.delivery("fcm", "delivered", at: "2026-11-28T09:00:00.000Z") + "\n").write(to: url, atomically: true, encoding: .utf8)
        d = digests.digest(id: "j")
        #expect(d.failures.isEmpty && d.seconds.values.reduce(0) { $0 + $1.delivered } == 1)
    }

    @Test func longSpansAreBucketedIntoAFewPoints() {
        var d = ResultLogDigest()
        for t in stride(from: 1_800_000_000, to: 1_800_003_600, by: 7) { d.seconds[t, default: .init()].delivered += 1 }
        let s = d.series(points: 120)
        // An hour less a second: 30 s buckets (the smallest round step that gives at most 120).
        #expect(s.step == 30 && s.buckets.count == 120 && s.buckets.reduce(0) { $0 + $1.delivered } == d.seconds.count)
    }

    @Test func theCampaignListFiltersAndPagesNewestFirst() throws {
        let dir = TempDir("pushspool-index")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        for i in 0..<120 {
            let app = i % 3 == 0 ? #", "app": ["shop"]"# : ""
            let secure = i == 7 ? #", "secure": true"# : ""
            let job = #"{"id": "job-\#(i)", "broadcast": true, "pns": ["fcm"], "message": "spring sale \#(i)"\#(app)\#(secure)}"#
            let folder: Spool.Folder = i < 100 ? .done : .incoming
            let path = spool.url(folder, "job-\(i).json").path
            FileManager.default.createFile(atPath: path, contents: Data(job.utf8))
            // Each a second newer than the one before.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_800_000_000 + Double(i))], ofItemAtPath: path)
            if i < 100 {
                let status = i % 10 == 0 ? "cancelled" : "done"
                try (#"{"type":"summary","id":"job-\#(i)","status":"\#(status)","delivered":1,"failed":0,"unregistered":0,"retries":0,"duration_ms":1}"# + "\n")
                    .write(to: spool.resultURL(jobID: "job-\(i)"), atomically: true, encoding: .utf8)
            }
        }
        let index = CampaignIndex(spool: spool, defaultApp: "default")
        var page = index.page(.init(), page: 1, perPage: 50) { _ in "waiting" }
        #expect(page.total == 120 && page.entries.map(\.id).prefix(3) == ["job-119", "job-118", "job-117"])
        page = index.page(.init(), page: 3, perPage: 50) { _ in "waiting" }
        #expect(page.entries.count == 20 && page.entries.last?.id == "job-0")
        var f = CampaignIndex.Filter()
        f.states = ["cancelled"]
        page = index.page(f, page: 1, perPage: 50) { _ in "waiting" }
        #expect(page.total == 10 && page.entries.allSatisfy { Int($0.id.dropFirst(4))! % 10 == 0 })
        f = .init()
        f.app = "shop"
        #expect(index.page(f, page: 1, perPage: 200) { _ in nil }.total == 40)
        f = .init()
        f.text = "SALE 11"   // job-11, job-110…119
        #expect(index.page(f, page: 1, perPage: 200) { _ in nil }.total == 11)
        // A secure job's text is neither shown nor searched.
        f.text = "sale 7"
        let found = index.page(f, page: 1, perPage: 200) { _ in nil }.entries.map(\.id)
        #expect(!found.contains("job-7") && found.contains("job-70"))
        #expect(index.page(.init(), page: 1, perPage: 200) { _ in nil }.entries.first { $0.id == "job-7" }?.headline == nil)
    }
}
