import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// A secure, localized job through the real binary (`run --once`, the sandbox provider): each
/// device's push carries only its id, the desk then gives each device's user the text it would
/// have shown (its language, the `From` prefix), the text is nowhere under the spool but the
/// job's 0600 file, and the funnel counts what the devices report.
@Suite(.serialized) struct SecureJobRunTests {
    static let job = """
        {"id": "bank-1", "tags": "customers", "pns": ["apns", "fcm", "web"], "from": "bank", "message": "balance is 12 EUR",
         "secure": true, "localized": {"fr": {"message": "solde 12 EUR", "title": "Solde"}}}
        """

    @Test func secureJobSendsIDsAndTheDeskGivesEachUserItsText() throws {
        let dir = TempDir("secure-run")
        dir.write("pushspool.json", #"{"spool": "spool"}"#)
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        try initSpool(common)
        var lines = ""
        for i in 0..<6 {
            let platform = ["apns", "fcm"][i % 2]
            let handle = platform == "apns" ? String(format: "%064x", i + 1) : "tok-\(i)"
            let lang = i < 3 ? #","lang":"fr-CA""# : ""
            lines += #"{"id":"d\#(i)","platform":"\#(platform)","handle":"\#(handle)","tags":["customers","username:u\#(i)"]\#(lang)}"# + "\n"
        }
        dir.write("devices.jsonl", lines)
        var r = try runPushspool(["import"] + common + [dir.path("devices.jsonl")], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        dir.write("spool/incoming/bank-1.json", Self.job, mode: 0o644)
        r = try runPushspool(["run", "--once"] + common, cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("balance") && !r.stderr.contains("balance") && !r.stderr.contains("solde"))

        // Each push: the tutorial's shape, an id of its own.
        var ids: [String: String] = [:]
        for line in dir.jsonLines("spool/outbox/apns.jsonl") {
            let payload = try #require(line["payload"] as? [String: Any])
            #expect((payload["aps"] as? [String: Int]) == ["content-available": 1] && payload.count == 2)
            ids[line["device"] as? String ?? ""] = payload["secureId"] as? String
        }
        for line in dir.jsonLines("spool/outbox/fcm.jsonl") {
            let message = (line["payload"] as? [String: Any])?["message"] as? [String: Any]
            let data = try #require(message?["data"] as? [String: String])
            #expect(data.count == 1)
            ids[line["device"] as? String ?? ""] = data["secureId"]
        }
        #expect(ids.count == 6 && Set(ids.values).count == 6 && ids.values.allSatisfy { $0.utf8.count == 46 })

        // The job file in done/ is its owner's alone; nothing else under the spool holds the text.
        let done = dir.path("spool/done/bank-1.json")
        let mode = try FileManager.default.attributesOfItem(atPath: done)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let leaks = Self.files(holding: ["balance is 12", "solde 12"], under: dir.url.appendingPathComponent("spool"))
            .filter { !$0.hasSuffix("registry.sqlite") && !$0.hasSuffix("registry.sqlite-wal") && $0 != done }
        #expect(leaks.isEmpty, "\(leaks)")

        // The desk: each user's own device's text, in its language; another user's id is not found.
        let registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        defer { registry.close() }
        let desk = NotificationDesks.desk(registry: registry, spool: try Spool(root: dir.url.appendingPathComponent("spool"), create: false))
        let now = Date()
        for i in 0..<6 {
            let id = try #require(ids["d\(i)"])
            guard case .content(let c, let read) = desk.fetch(id: id, user: "u\(i)", now: now) else {
                Issue.record("d\(i): not found")
                continue
            }
            #expect(c.message == (i < 3 ? "From bank: solde 12 EUR" : "From bank: balance is 12 EUR") && !read, "d\(i)")
            #expect(c.title == (i < 3 ? "Solde" : nil) && c.job == "bank-1")
            #expect(desk.fetch(id: id, user: "u\((i + 1) % 6)", now: now) == .notFound)
        }
        _ = desk.record([NotificationEvent(id: ids["d0"]!, type: .opened, at: nil)], user: "u0", now: now)
        let funnel = try #require(try desk.funnel(job: "bank-1"))
        let steps: [Int] = [funnel.total.targets, funnel.total.sent, funnel.total.delivered, funnel.total.received, funnel.total.opened]
        #expect(steps == [6, 6, 6, 6, 1])
        #expect(funnel.byPlatform[.apns]?.received == 3 && funnel.byApp["default"]?.opened == 1)
        // The same funnel in `status ID` and `results ID --funnel` (text and JSON).
        r = try runPushspool(["status", "bank-1", "--json"] + common, cwd: dir.url)
        let status = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let shown = status?["funnel"] as? [String: Any]
        #expect(r.status == 0 && status?["state"] as? String == "done", "\(r.stdout)\(r.stderr)")
        #expect(["targets", "sent", "delivered", "received", "opened"].map { shown?[$0] as? Int } == [6, 6, 6, 6, 1], "\(r.stdout)")
        #expect((shown?["rates"] as? [String: Any])?["opened"] as? Double == 0.1667)
        #expect(((shown?["by_platform"] as? [String: Any])?["fcm"] as? [String: Any])?["received"] as? Int == 3)
        r = try runPushspool(["results", "bank-1", "--funnel"] + common, cwd: dir.url)
        #expect(r.stdout.hasPrefix("funnel of bank-1: targets 6 → sent 6 (100%) → delivered 6 (100%) → received 6 (100%) → opened 1 (16.7%)\n"),
                "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("  apns: targets 3 → sent 3 (100%) → delivered 3 (100%) → received 3 (100%) → opened 1 (33.3%)"))
        r = try runPushspool(["results", "bank-1", "--funnel", "--json"] + common, cwd: dir.url)
        let results = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(results?["received"] as? Int == 6 && results?["job"] as? String == "bank-1")
        r = try runPushspool(["status", "bank-1"] + common, cwd: dir.url)
        #expect(r.stdout.contains("job bank-1: done") && r.stdout.contains("opened 1"), "\(r.stdout)")
        #expect(!r.stdout.contains("balance"))

        // Past its time the content is erased, and the job file with it.
        NotificationSweep(registry: registry, spool: try Spool(root: dir.url.appendingPathComponent("spool"), create: false),
                              keepDays: 30, log: Log(minimum: .error)).run(now: now.addingTimeInterval(8 * 24 * 3600))
        #expect(!FileManager.default.fileExists(atPath: done))
        #expect(desk.fetch(id: ids["d0"]!, user: "u0", now: now) == .gone)
        registry.close()
        let after = Self.files(holding: ["balance is 12", "solde 12"], under: dir.url.appendingPathComponent("spool"))
        #expect(after.isEmpty, "\(after)")
    }

    /// A dispatcher's own sweep (any `run`, at most once a minute) erases expired content and the
    /// job's file: the next `run --once` after `secure_ttl_seconds` leaves no trace of the text.
    /// A secure job refused by validation keeps its text for its owner alone in failed/, however
    /// it was dropped.
    @Test func aRefusedSecureJobIsItsOwnersAloneInFailed() throws {
        let dir = TempDir("secure-refused")
        dir.write("pushspool.json", #"{"spool": "spool"}"#)
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        try initSpool(common)
        dir.write("spool/incoming/bad-1.json",
                  #"{"id": "bad-1", "tags": ["username:alice"], "pns": ["apns"], "message": "code 4711", "secure": true}"#, mode: 0o644)
        let r = try runPushspool(["run", "--once"] + common, cwd: dir.url)
        #expect(r.stdout.contains("tags: must be a string"), "\(r.stdout)")
        let failed = dir.path("spool/failed/bad-1.json")
        let mode = try FileManager.default.attributesOfItem(atPath: failed)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func theNextRunErasesExpiredContent() throws {
        let dir = TempDir("secure-expiry")
        dir.write("pushspool.json", #"{"spool": "spool"}"#)
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        try initSpool(common)
        var r = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "username:u1", "--id", "d1"] + common, cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        dir.write("spool/incoming/short.json", #"{"id":"short","to_tag":"username:u1","pns":"fcm","message":"pin 9931","secure":true,"secure_ttl_seconds":1}"#)
        r = try runPushspool(["run", "--once"] + common, cwd: dir.url)
        #expect(r.status == 0 && FileManager.default.fileExists(atPath: dir.path("spool/done/short.json")), "\(r.stderr)")
        let sentAt = Date()
        Thread.sleep(until: sentAt.addingTimeInterval(1.2))
        r = try runPushspool(["run", "--once"] + common, cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("spool/done/short.json")))
        let registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        #expect(try registry.trackedJob(id: "short")?.content == nil)
        registry.close()
        #expect(Self.files(holding: ["pin 9931"], under: dir.url.appendingPathComponent("spool")).isEmpty, "not in the registry's file or its log either")
    }

    /// Every file under `root` whose bytes contain one of `needles`.
    static func files(holding needles: [String], under root: URL) -> [String] {
        var found: [String] = []
        let items = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = items?.nextObject() as? URL {
            guard let data = FileManager.default.contents(atPath: url.path) else { continue }
            let bytes = [UInt8](data)
            for n in needles where bytes.firstRange(of: Array(n.utf8)) != nil { found.append(url.path); break }
        }
        return found
    }
}
