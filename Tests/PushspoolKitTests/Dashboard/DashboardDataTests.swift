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
        var asked = 0
        page = index.page(f, page: 1, perPage: 50) { _ in asked += 1; return "waiting" }
        #expect(page.total == 10 && page.entries.allSatisfy { Int($0.id.dropFirst(4))! % 10 == 0 })
        #expect(asked == 0)   // only ended states: no job that has not ended is asked
        f.states = ["waiting"]
        #expect(index.page(f, page: 1, perPage: 50) { _ in asked += 1; return "waiting" }.total == 20 && asked == 20)
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

    @Test func theCampaignListFollowsJobsThatComeMoveAndGo() throws {
        let dir = TempDir("pushspool-index-moves")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        func write(_ folder: Spool.Folder, _ name: String, id: String, title: String, second: Double) throws {
            let path = spool.url(folder, name).path
            let job = #"{"id": "\#(id)", "broadcast": true, "pns": ["fcm"], "title": "\#(title)", "message": "m"}"#
            _ = FileManager.default.createFile(atPath: path, contents: Data(job.utf8))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_800_000_000 + second)], ofItemAtPath: path)
        }
        for i in 0..<300 { try write(.done, "j\(i).json", id: "j\(i)", title: "Offer \(i)", second: Double(i)) }
        // A file not named after its job, and a title in another script.
        try write(.incoming, "dropped-by-hand.json", id: "hand", title: "Été indien", second: 1000)
        let index = CampaignIndex(spool: spool, defaultApp: "default")
        func ids(_ text: String? = nil) -> [String] {
            var f = CampaignIndex.Filter()
            f.text = text
            return index.page(f, page: 1, perPage: 400) { _ in "waiting" }.entries.map(\.id)
        }
        #expect(ids().count == 301 && ids().first == "hand" && ids().last == "j0")
        #expect(index.page(.init(), page: 1, perPage: 1) { _ in nil }.entries.first?.name == "dropped-by-hand.json")
        #expect(ids("ÉTÉ") == ["hand"] && ids("OFFER 29") == ["j299", "j298", "j297", "j296", "j295", "j294", "j293", "j292", "j291", "j290", "j29"])
        // Most jobs go (their text left behind in the store until it is compacted), one moves, new ones come.
        for i in 0..<290 { try FileManager.default.removeItem(atPath: spool.url(.done, "j\(i).json").path) }
        try FileManager.default.moveItem(atPath: spool.url(.incoming, "dropped-by-hand.json").path, toPath: spool.url(.active, "dropped-by-hand.json").path)
        for i in 0..<5 { try write(.incoming, "n\(i).json", id: "n\(i)", title: "New \(i)", second: 2000 + Double(i)) }
        // Listed again at once (a test cannot wait for the folders' times to age).
        _ = index.snapshot(now: Date().timeIntervalSince1970 + 10)
        let after = index.page(.init(), page: 1, perPage: 400) { _ in nil }.entries
        #expect(after.map(\.id) == ["n4", "n3", "n2", "n1", "n0", "hand"] + (290..<300).reversed().map { "j\($0)" })
        #expect(after.map { $0.headline ?? "" } == ["New 4", "New 3", "New 2", "New 1", "New 0", "Été indien"] + (290..<300).reversed().map { "Offer \($0)" })
        #expect(after.first { $0.id == "hand" }?.folder == .active)
        #expect(ids("offer 2") == (290..<300).reversed().map { "j\($0)" } && ids("offer 1").isEmpty)
    }

    @Test(arguments: [
        ("sale", "Spring SALE", true), ("spring s", "Spring SALE", true), ("ale", "Spring SALE", true),
        ("sales", "Spring SALE", false), ("", "anything", true), ("x", "", false), ("gale", "Spring SALE", false),
        ("[", "{[", true), ("@", "`", false),   // only A–Z fold: neither `[` nor `@` is a letter
    ])
    func aSearchFoldsASCIICapitalsOnly(query: String, text: String, found: Bool) {
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBufferPointer { CampaignRecords.find(Array(query.utf8), in: $0) } == found)
    }

    @Test func theDigestCountsAsAWholeReadDoesWhateverTheLinesHold() throws {
        let dir = TempDir("pushspool-digest-tally")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let url = spool.resultURL(jobID: "t")
        var lines = [#"{"type":"job","id":"t","file":"t.json","received_at":"2026-11-28T08:00:00.000Z","pns":["apns","fcm"],"targets":9}"#]
        lines.append(Self.delivery("apns", "delivered", at: "2026-11-28T08:00:00.100Z"))
        lines.append(Self.delivery("apns", "delivered", at: "2026-11-28T08:00:00.900Z"))   // the same second: its time not parsed again
        lines.append(Self.delivery("fcm", "failed", at: "2026-11-28T08:00:01.000Z", code: "400", reason: #"bad \"token\" here"#))   // an escape: parsed whole
        // No app (a log from before apps), an hour ahead in another offset, a nested member, spaces.
        lines.append(#"{"type":"delivery", "platform":"fcm","provider":"p","app":null,"device":"d","status":"unregistered","attempts":2,"code":"404","reason":"gone","provider_id":{"a":[1,"}"]},"at":"2026-11-28T10:00:02.000+01:00"}"#)
        lines.append(#"{"type":"delivery","platform":"apns","provider":"p","app":"shop","device":"d","status":"capped","attempts":0,"code":null,"reason":null,"provider_id":null,"at":null}"#)
        lines.append(#"{"type":"delivery","platform":"nokia","provider":"p","app":"shop","device":"d","status":"delivered","attempts":1}"#)   // no such platform: neither counts it
        lines.append(#"{"type":"summary","id":"t","status":"done","delivered":2,"failed":1,"unregistered":1,"retries":1,"duration_ms":9}"#)
        try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
        let digest = ResultLogDigests(spool: spool).digest(id: "t")
        let whole = try #require(ResultLogContents.read(url))
        var expected = whole.byRoute
        expected.targets = whole.targets
        #expect(digest.deliveries == expected && digest.found && digest.summary != nil)
        #expect(digest.deliveries.routes[.init(app: "default", platform: .fcm)]?.unregistered == 1)
        #expect(digest.failures[.init(platform: "fcm", status: "failed", code: "400", reason: #"bad "token" here"#)] == 1)
        let seconds = digest.seconds.keys.sorted()
        #expect(seconds.count == 3 && digest.seconds[seconds[0]]?.delivered == 2 && seconds[2] - seconds[0] == 3602)
        #expect(!ResultLogDigests(spool: spool).digest(id: "none").found)
    }

    @Test func linesAsTheWriterLaysThemOutCountAsAWholeReadDoes() throws {
        let dir = TempDir("pushspool-digest-writer")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let url = spool.resultURL(jobID: "w")
        typealias D = ResultRecord.Delivery
        let written = [
            D(platform: .apns, provider: "apns", app: "shop", target: .device("d1"), status: .delivered, attempts: 1, code: "200", reason: nil,
              providerID: "x", at: "2026-11-28T08:00:00.100Z"),
            D(platform: .fcm, provider: "fcm", app: nil, target: .tags(nil), status: .failed, attempts: 3, code: "403", reason: "SENDER_ID_MISMATCH",
              providerID: nil, at: "2026-11-28T08:00:01.000Z"),
            D(platform: .fcm, provider: "fcm", app: "shop", target: .service(field: "topic", value: "news"), status: .unregistered, attempts: 1,
              code: "404", reason: "UNREGISTERED", providerID: nil, at: "2026-11-28T08:00:01.500Z"),
            // An escape (in the device's id, and in a reason): read member by member, then whole.
            D(platform: .wns, provider: "wns", app: "default", target: .device(#"d"2"#), status: .delivered, attempts: 1, code: "200", reason: nil,
              providerID: nil, at: "2026-11-28T08:00:02.000Z"),
            D(platform: .fcm, provider: "fcm", app: "shop", target: .device("d4"), status: .failed, attempts: 1, code: "400", reason: #"bad "x""#,
              providerID: nil, at: "2026-11-28T08:00:02.500Z"),
            D(platform: .apns, provider: "apns", app: "shop", target: .device("d3"), status: .capped, attempts: 0, code: nil, reason: nil,
              providerID: nil, at: nil),
            D(platform: .apns, provider: "apns", app: "shop", target: .tags("vip && !optout"), status: .delivered, attempts: 2, code: "200",
              reason: nil, providerID: nil, at: "2026-11-28T08:00:02.900Z"),
        ]
        var bytes = Array((#"{"type":"job","id":"w","file":"w.json","received_at":"2026-11-28T08:00:00.000Z","pns":["apns","fcm","wns"],"targets":9}"# + "\n").utf8)
        for d in written { bytes += d.line() }
        try Data(bytes).write(to: url)
        let digest = ResultLogDigests(spool: spool).digest(id: "w")
        let whole = try #require(ResultLogContents.read(url))
        var expected = whole.byRoute
        expected.targets = whole.targets
        #expect(digest.deliveries == expected)
        #expect(digest.deliveries.routes[.init(app: "shop", platform: .apns)] == {
            var c = DeliveryTally.Counts()
            (c.delivered, c.capped) = (2, 1)
            return c
        }())
        #expect(digest.failures == [
            .init(platform: "fcm", status: "failed", code: "403", reason: "SENDER_ID_MISMATCH"): 1,
            .init(platform: "fcm", status: "unregistered", code: "404", reason: "UNREGISTERED"): 1,
            .init(platform: "fcm", status: "failed", code: "400", reason: #"bad "x""#): 1,
        ])
        let s = digest.series()
        #expect(s.buckets.map(\.delivered) == [1, 0, 2] && s.buckets.map { $0.failed + $0.unregistered } == [0, 2, 1])
    }

    @Test func aRunningJobsDigestIsReadAgainEveryFewSecondsAndAtOnceWhenItEnds() throws {
        let dir = TempDir("pushspool-digest-refresh")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let url = spool.resultURL(jobID: "r")
        func append(_ lines: [String]) throws {
            let handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
            try handle.close()
        }
        try (#"{"type":"job","id":"r","file":"r.json","received_at":"2026-11-28T08:00:00.000Z","pns":["fcm"],"targets":9}"# + "\n")
            .write(to: url, atomically: true, encoding: .utf8)
        let digests = ResultLogDigests(spool: spool, runningRefresh: 5)
        let t = 1_800_000_000.0
        func delivered(_ now: Double) -> Int { digests.digest(id: "r", now: now).deliveries.routes.values.reduce(0) { $0 + $1.delivered } }
        #expect(delivered(t) == 0)
        try append((0..<3).map { _ in Self.delivery("fcm", "delivered", at: "2026-11-28T08:00:01.000Z") })
        // Running: what it said a moment ago, until a few seconds have passed.
        #expect(delivered(t + 1) == 0 && delivered(t + 4.9) == 0)
        #expect(delivered(t + 5) == 3)
        try append([Self.delivery("fcm", "delivered", at: "2026-11-28T08:00:06.000Z"),
                    #"{"type":"summary","id":"r","status":"done","delivered":4,"failed":0,"unregistered":0,"retries":0,"duration_ms":6000}"#])
        // Ended: exact at once.
        #expect(delivered(t + 5.5) == 4 && digests.digest(id: "r", now: t + 5.5).summary?.delivered == 4)
    }

    @Test func aQueuedJobsStateFromTheListIsTheOneStatusGives() throws {
        let dir = TempDir("pushspool-index-waiting")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let now = Date()
        let later = Timestamp.rfc3339(now.addingTimeInterval(3600)), earlier = Timestamp.rfc3339(now.addingTimeInterval(-3600))
        let jobs = [("plain", ""), ("later", #", "not_before": "\#(later)""#), ("earlier", #", "not_before": "\#(earlier)""#),
                    ("held", #", "not_before": "\#(later)""#), ("dropped", "")]
        for (id, extra) in jobs {
            let job = #"{"id": "\#(id)", "broadcast": true, "pns": ["fcm"], "message": "m"\#(extra)}"#
            FileManager.default.createFile(atPath: spool.url(.incoming, "\(id).json").path, contents: Data(job.utf8))
        }
        let controls = JobControls(directory: spool.url(.control))
        try controls.write(.pause, id: "held")
        try controls.write(.cancel, id: "dropped")
        let status = JobStatus(spool: spool)
        let entries = CampaignIndex(spool: spool, defaultApp: "default").page(.init(), page: 1, perPage: 10) { _ in nil }.entries
        #expect(entries.count == 5)
        for e in entries {
            let listed = status.waitingState(id: e.id, notBefore: e.notBefore, now: now).rawValue
            #expect(listed == status.lookup(id: e.id, now: now)?["state"]?.stringValue, "\(e.id)")
        }
        #expect(Dictionary(uniqueKeysWithValues: entries.map { ($0.id, status.waitingState(id: $0.id, notBefore: $0.notBefore, now: now)) })
            == ["plain": .waiting, "later": .scheduled, "earlier": .waiting, "held": .paused, "dropped": .cancelling])
    }

    @Test func theListIsSavedAndReadBackForTheSameFilesOnly() throws {
        let dir = TempDir("pushspool-index-saved")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        func write(_ name: String, title: String, second: Double, replacing: Bool = false) throws {
            let path = spool.url(.done, name).path
            let job = Data(#"{"id": "\#(name.dropLast(5))", "broadcast": true, "pns": ["fcm"], "title": "\#(title)", "message": "m"}"#.utf8)
            // In place (the same inode), or a new file renamed over it.
            if replacing { try job.write(to: URL(fileURLWithPath: path), options: .atomic) } else { try job.write(to: URL(fileURLWithPath: path)) }
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_800_000_000 + second)], ofItemAtPath: path)
        }
        for i in 0..<50 { try write("j\(i).json", title: "Offer \(i)", second: Double(i)) }
        let first = CampaignIndex(spool: spool, defaultApp: "default")
        #expect(first.page(.init(), page: 1, perPage: 100) { _ in nil }.total == 50)
        let saved = try FileIO.readAll(first.savedURL)
        #expect(CampaignRecords(saved: saved)?.saved() == saved)
        #expect(CampaignRecords(saved: Array(saved.dropLast())) == nil && CampaignRecords(saved: Array(saved.dropFirst())) == nil)
        // Changed while no serve ran: one file rewritten in place (its saved record still used, as
        // for a file never changed), one replaced by a new file (read again), one gone, one new.
        try write("j1.json", title: "Rewritten in place", second: 1)
        try write("j2.json", title: "Replaced", second: 2, replacing: true)
        try FileManager.default.removeItem(atPath: spool.url(.done, "j3.json").path)
        try write("j50.json", title: "Offer 50", second: 50)
        let again = CampaignIndex(spool: spool, defaultApp: "default")
        let entries = again.page(.init(), page: 1, perPage: 100) { _ in nil }.entries
        let headlines = Dictionary(uniqueKeysWithValues: entries.map { ($0.id, $0.headline ?? "") })
        #expect(entries.count == 50 && entries.first?.id == "j50" && headlines["j3"] == nil)
        #expect(headlines["j1"] == "Offer 1" && headlines["j2"] == "Replaced" && headlines["j50"] == "Offer 50" && headlines["j49"] == "Offer 49")
    }

    @Test(arguments: [
        (#"{"a":"x","b":1,"c":null}"#, "a=s:x b=1 c=null"),
        (#" { "a" : "x" , "b" : [1,{"c":"]"}] , "d":true } "#, "a=s:x b=[] d=true"),
        (#"{"a":"x\"y"}"#, "a=escaped"),
        (#"{}"#, ""),
        (#"{"a":"x""#, "not an object"),
        (#"["a"]"#, "not an object"),
        (#"{"a":{"b":"}"}"#, "not an object"),
        (#"{"a" "x"}"#, "not an object"),
    ])
    func flatMembersAreFoundInTheBytes(line: String, members: String) {
        let bytes = Array(line.utf8)
        var found: [String] = []
        let ok = bytes.withUnsafeBufferPointer { p in
            FlatJSONMembers.scan(p) { key, value in
                let name = String(decoding: p[key], as: UTF8.self)
                switch value {
                case .string(let r): found.append("\(name)=s:\(String(decoding: p[r], as: UTF8.self))")
                case .escapedString: found.append("\(name)=escaped")
                case .null: found.append("\(name)=null")
                case .scalar(let r): found.append("\(name)=\(String(decoding: p[r], as: UTF8.self))")
                case .container: found.append("\(name)=[]")
                }
            }
        }
        #expect((ok ? found.joined(separator: " ") : "not an object") == members)
    }
}
