import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// `RegistryNotificationDesk` on SQLite and PostgreSQL: fetching a secure job's content as its
/// device would have shown it, ownership, one answer for every miss, expiry, events counted once
/// per (id, type), and the funnel (also after reopening, and from a second desk).
@Suite struct NotificationDeskTests {
    static let sentAt = Date(timeIntervalSince1970: 1_800_000_000)

    /// A secure, localized job tracked in `registry`, and the devices it went to with their keys.
    struct Sent {
        var job: TrackedJob
        var keys: [String: Int64]
        var mac: NotificationMAC

        func id(_ device: String, _ platform: Platform = .apns) -> String {
            mac.id(job: job.number, device: keys[device] ?? 0, platform: platform, installationID: device).text
        }
    }

    static func send(_ registry: any RegistryDatabase, id: String = "alert-1", secure: Bool = true,
                     lifetime: TimeInterval = 3600) throws -> Sent {
        try registry.upsert(Registration(id: "alice-phone", platform: .apns, handle: String(repeating: "a", count: 64),
                                         tags: ["username:alice"], lang: LanguageTag("fr-CA")))
        try registry.upsert(Registration(id: "bob-phone", platform: .apns, handle: String(repeating: "b", count: 64), tags: ["username:bob"]))
        var keys: [String: Int64] = [:]
        try registry.forEach(platforms: [.apns], matching: nil, after: 0) { d, key in keys[d.id] = key; return true }
        let content = SecureJobContent(message: "your balance is low", from: "bank", title: "Balance",
                                       localized: [LanguageTag("fr")!: LocalizedText(message: "solde bas", title: "Solde")],
                                       data: ["account": "42"], url: "https://bank.example/a")
        var job = TrackedJob(id: id, secure: secure, content: secure ? content : nil, audience: "username:alice || username:bob",
                             apps: ["default"], platforms: [.apns], sentAt: sentAt,
                             expiresAt: secure ? sentAt.addingTimeInterval(lifetime) : nil)
        job.number = try registry.trackJob(job)
        return Sent(job: job, keys: keys, mac: NotificationMAC(key: try registry.notificationKey()))
    }

    @Test(arguments: RegistryBackend.allCases) func fetchesTheTextAsTheDeviceShowedIt(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        let sent = try Self.send(registry)
        #expect(try registry.trackJob(sent.job) == sent.job.number, "a resumed job keeps its number")
        let desk = RegistryNotificationDesk(registry: registry)
        let now = Self.sentAt.addingTimeInterval(10)
        guard case .content(let c, let read) = desk.fetch(id: sent.id("alice-phone"), user: "alice", now: now) else {
            Issue.record("alice's id was not found")
            return
        }
        #expect(c.message == "From bank: solde bas" && c.title == "Solde", "fr-CA best-matches fr")
        #expect(c.data == ["account": "42"] && c.url == "https://bank.example/a" && c.job == "alert-1" && c.platform == .apns)
        #expect(c.sentAt == Self.sentAt && c.expiresAt == Self.sentAt.addingTimeInterval(3600))
        #expect(read == false)
        guard case .content(let again, let readAgain) = desk.fetch(id: sent.id("alice-phone"), user: "alice", now: now) else {
            Issue.record("second fetch failed")
            return
        }
        #expect(again.message == c.message && readAgain == true)
        guard case .content(let bobs, _) = desk.fetch(id: sent.id("bob-phone"), user: "bob", now: now) else {
            Issue.record("bob's id was not found")
            return
        }
        #expect(bobs.message == "From bank: your balance is low" && bobs.title == "Balance", "no lang: the job's own text")
        // A service (bearer) may read any.
        if case .content = desk.fetch(id: sent.id("alice-phone"), user: nil, now: now) {} else { Issue.record("service fetch failed") }
    }

    @Test(arguments: RegistryBackend.allCases) func everyMissIsOneAnswer(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        let sent = try Self.send(registry)
        let desk = RegistryNotificationDesk(registry: registry)
        let now = Self.sentAt.addingTimeInterval(10)
        let alices = sent.id("alice-phone")
        var forged = Array(alices.utf8)
        forged[forged.count - 3] = forged[forged.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let otherJob = NotificationMAC(key: NotificationMAC.newKey()).id(job: 999, device: sent.keys["alice-phone"]!, platform: .apns,
                                                                          installationID: "alice-phone").text
        let wrongPlatform = sent.mac.id(job: sent.job.number, device: sent.keys["alice-phone"]!, platform: .fcm, installationID: "alice-phone").text
        let wrongDevice = sent.mac.id(job: sent.job.number, device: sent.keys["alice-phone"]!, platform: .apns, installationID: "bob-phone").text
        for (id, user) in [(alices, "bob"), (String(decoding: forged, as: UTF8.self), "alice"), (otherJob, "alice"), ("short", "alice"),
                           (wrongPlatform, "alice"), (wrongDevice, "alice"), (alices + "A", "alice"), ("", "alice")] {
            #expect(desk.fetch(id: id, user: user, now: now) == .notFound, "\(id) for \(user)")
            #expect(desk.record([NotificationEvent(id: id, type: .opened, at: nil)], user: user, now: now) == [.notFound])
        }
        #expect(try registry.eventCounts(job: sent.job.number).isEmpty, "nothing recorded for a miss")
    }

    @Test(arguments: RegistryBackend.allCases) func expiredContentIsGone(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        let sent = try Self.send(registry, lifetime: 60)
        let desk = RegistryNotificationDesk(registry: registry)
        let later = Self.sentAt.addingTimeInterval(61)
        #expect(desk.fetch(id: sent.id("alice-phone"), user: "alice", now: later) == .gone, "past its time, before the sweep")
        #expect(try registry.eraseExpiredContent(now: later).map(\.id) == ["alert-1"])
        #expect(try registry.trackedJob(id: "alert-1")?.content == nil)
        #expect(try registry.eraseExpiredContent(now: later).isEmpty)
        #expect(desk.fetch(id: sent.id("alice-phone"), user: "alice", now: Self.sentAt) == .gone)
        #expect(desk.fetch(id: sent.id("alice-phone"), user: "bob", now: Self.sentAt) == .notFound, "only its owner learns it is gone")
        #expect(desk.record([NotificationEvent(id: sent.id("alice-phone"), type: .opened, at: nil)], user: "alice", now: later) == [.notFound])
    }

    @Test(arguments: RegistryBackend.allCases) func eventsCountOncePerIDAndType(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        let sent = try Self.send(registry, secure: false)
        let metrics = Metrics()
        let desk = RegistryNotificationDesk(registry: registry, metrics: metrics)
        let now = Self.sentAt.addingTimeInterval(100)
        let a = sent.id("alice-phone"), b = sent.id("bob-phone")
        let statuses = desk.record([NotificationEvent(id: a, type: .received, at: nil), NotificationEvent(id: a, type: .received, at: nil),
                                    NotificationEvent(id: a, type: .opened, at: now.addingTimeInterval(-5)),
                                    NotificationEvent(id: b, type: .received, at: now.addingTimeInterval(3600)),
                                    NotificationEvent(id: b, type: .received, at: Self.sentAt.addingTimeInterval(-3600)),
                                    NotificationEvent(id: b, type: .dismissed, at: nil)], user: nil, now: now)
        #expect(statuses == [.recorded, .duplicate, .recorded, .invalid(field: "at", why: "is in the future"),
                             .invalid(field: "at", why: "is older than the notification's job"), .recorded])
        #expect(desk.record([NotificationEvent(id: a, type: .opened, at: nil)], user: "alice", now: now) == [.duplicate])
        #expect(desk.record([NotificationEvent(id: b, type: .opened, at: nil)], user: "alice", now: now) == [.notFound], "bob's, not alice's")
        #expect(desk.fetch(id: a, user: "alice", now: now) == .notFound, "a tracked job that is not secure has nothing to fetch")
        // Counted once each, as recorded (never the duplicates or refusals).
        let text = metrics.render(Metrics.Gauges())
        #expect(text.contains("# TYPE pushspool_notification_events_total counter\n"))
        #expect(text.contains(#"pushspool_notification_events_total{app="default",platform="apns",type="received"} 1"#))
        #expect(text.contains(#"pushspool_notification_events_total{app="default",platform="apns",type="opened"} 1"#))
        #expect(text.contains(#"pushspool_notification_events_total{app="default",platform="apns",type="dismissed"} 1"#))
    }

    /// Another process holding SQLite's write lock past the wait: a fetch and every event are
    /// `unavailable` (no miss, no content served without its `received`, nothing recorded);
    /// once the lock is released the same calls count as if the outage had never been.
    @Test func aBusyRegistryIsUnavailableNotAMiss() throws {
        let (dir, registry) = try RegistryFixture.make()
        defer { registry.close() }
        let sent = try Self.send(registry)
        let desk = RegistryNotificationDesk(registry: registry)
        let now = Self.sentAt.addingTimeInterval(10)
        let alices = sent.id("alice-phone"), bobs = sent.id("bob-phone")
        try registry.locked { db in try db.execute("PRAGMA busy_timeout = 50") }
        let holder = try SQLiteDatabase(path: dir.path("registry.sqlite"))
        defer { holder.close() }
        try holder.execute("BEGIN IMMEDIATE")
        #expect(desk.fetch(id: alices, user: "alice", now: now) == .unavailable(.busy))
        #expect(desk.record([NotificationEvent(id: bobs, type: .opened, at: nil)], user: "bob", now: now) == [.unavailable(.busy)])
        #expect(desk.record([NotificationEvent(id: bobs, type: .received, at: nil), NotificationEvent(id: alices, type: .opened, at: nil)],
                            user: nil, now: now) == [.unavailable(.busy), .unavailable(.busy)])
        let unknown = sent.mac.id(job: sent.job.number, device: 999_999, platform: .apns, installationID: "nobody").text
        #expect(desk.fetch(id: unknown, user: "alice", now: now) == .notFound, "a miss needs no write: still the one answer")
        try holder.execute("COMMIT")
        guard case .content(let c, let read) = desk.fetch(id: alices, user: "alice", now: now) else {
            Issue.record("alice's id was not found once the lock was released")
            return
        }
        #expect(c.message == "From bank: solde bas" && read == false, "the busy fetch counted nothing")
        #expect(desk.record([NotificationEvent(id: bobs, type: .opened, at: nil), NotificationEvent(id: alices, type: .opened, at: nil)],
                            user: nil, now: now) == [.recorded, .recorded])
        let funnel = try #require(try desk.funnel(job: sent.job.id))
        #expect(funnel.total.received == 1 && funnel.total.opened == 2)
    }

    /// 1000 devices; 600 report received (some twice or three times), 200 opened: 1000/1000/1000/600/200,
    /// from the desk, after reopening the registry, and from a second desk on the same database.
    @Test(arguments: RegistryBackend.allCases) func funnelOfAThousand(backend: RegistryBackend) throws {
        let dir = TempDir("registry")
        let uri = backend == .postgres ? try RegistryFixture.postgresDatabase() : dir.path("registry.sqlite")
        func open() throws -> any RegistryDatabase {
            backend == .postgres ? try PostgresRegistry(uri: uri) : try SQLiteRegistry(path: uri)
        }
        let registry = try open()
        var keys: [(String, Int64)] = []
        for i in 0..<1000 {
            try registry.upsert(Registration(id: "d\(i)", platform: i % 2 == 0 ? .apns : .fcm,
                                             handle: i % 2 == 0 ? String(format: "%064x", i) : "fcm-token-\(i)", tags: ["username:u\(i)"]))
        }
        try registry.forEach(platforms: [.apns, .fcm], matching: nil, after: 0) { d, key in keys.append((d.id, key)); return true }
        var job = TrackedJob(id: "campaign", secure: false, content: nil, audience: nil, apps: ["default"], platforms: [.apns, .fcm],
                             sentAt: Self.sentAt, expiresAt: nil)
        job.number = try registry.trackJob(job)
        let mac = NotificationMAC(key: try registry.notificationKey())
        // The result log of the campaign: one delivered line per device.
        var log = ResultLogContents()
        log.absorb(Array(#"{"type":"job","id":"campaign","file":"campaign.json","received_at":"2027-01-15T08:00:00Z","pns":["apns","fcm"],"targets":1000}"#.utf8))
        for (i, (device, _)) in keys.enumerated() {
            let platform = i % 2 == 0 ? "apns" : "fcm"
            log.absorb(Array(#"{"type":"delivery","platform":"\#(platform)","provider":"\#(platform)","app":"default","device":"\#(device)","status":"delivered","attempts":1}"#.utf8))
        }
        log.absorb(Array(#"{"type":"summary","id":"campaign","status":"done","delivered":1000,"failed":0,"unregistered":0,"retries":0,"duration_ms":5}"#.utf8))
        let frozen = log
        let desk = RegistryNotificationDesk(registry: registry, results: { $0 == "campaign" ? .init(frozen) : nil })
        let now = Self.sentAt.addingTimeInterval(600)
        var events: [NotificationEvent] = []
        for (i, (device, key)) in keys.enumerated() {
            let platform: Platform = i % 2 == 0 ? .apns : .fcm
            let id = mac.id(job: job.number, device: key, platform: platform, installationID: device).text
            if i < 600 { for _ in 0...(i % 3) { events.append(NotificationEvent(id: id, type: .received, at: nil)) } }
            if i < 200 { events.append(NotificationEvent(id: id, type: .opened, at: nil)) }
        }
        var statuses: [NotificationEventStatus] = []
        for batch in stride(from: 0, to: events.count, by: NotificationEvent.maxBatch) {
            statuses += desk.record(Array(events[batch..<min(batch + NotificationEvent.maxBatch, events.count)]), user: nil, now: now)
        }
        #expect(statuses.count(where: { $0 == .recorded }) == 800 && statuses.count(where: { $0 == .duplicate }) == events.count - 800)
        func check(_ funnel: Funnel?, _ label: String) {
            guard let f = funnel else { Issue.record("\(label): no funnel"); return }
            let steps: [Int] = [f.total.targets, f.total.sent, f.total.delivered, f.total.received, f.total.opened]
            #expect(steps == [1000, 1000, 1000, 600, 200], "\(label)")
            #expect(f.byPlatform[.apns]?.received == 300 && f.byPlatform[.fcm]?.opened == 100 && f.byApp["default"]?.delivered == 1000, "\(label)")
        }
        check(try desk.funnel(job: "campaign"), "first desk")
        #expect(try registry.trackedJob(id: "campaign")?.deliveries != nil, "an ended job's counts are kept in the registry")
        #expect(try desk.funnel(job: "unknown") == nil)
        // With no result log at hand (another host): after reopening the registry, and (PostgreSQL)
        // from a second desk on the same database while the first is open.
        let second = try open()
        defer { second.close() }
        check(try RegistryNotificationDesk(registry: second).funnel(job: "campaign"), "second desk")
        registry.close()
        let reopened = try open()
        defer { reopened.close() }
        check(try RegistryNotificationDesk(registry: reopened).funnel(job: "campaign"), "reopened")
    }
}
