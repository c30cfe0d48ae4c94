import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// What the registry keeps of tracked jobs (`NotificationStore`), the same on SQLite and
/// PostgreSQL: one MAC key for every process, a job recorded once (its number kept across
/// resumes), events once per (job, device, platform, type), and what is deleted when.
@Suite struct RegistryNotificationStoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func job(_ id: String, secure: Bool = false, expires: Date? = nil) -> TrackedJob {
        TrackedJob(id: id, secure: secure, content: secure ? SecureJobContent(message: "secret \(id)") : nil, audience: "a || b",
                   apps: ["default", "shop"], platforms: [.apns, .web], sentAt: t0, expiresAt: expires, file: "\(id).json")
    }

    @Test(arguments: RegistryBackend.allCases) func oneKeyAndOneRowPerJob(backend: RegistryBackend) throws {
        let dir = TempDir("notification-store")
        let location = backend == .postgres ? try RegistryFixture.postgresDatabase() : dir.path("registry.sqlite")
        func open() throws -> any RegistryDatabase {
            backend == .postgres ? try PostgresRegistry(uri: location) : try SQLiteRegistry(path: location)
        }
        let first = try open(), second = try open()
        defer { first.close(); second.close() }
        let key = try first.notificationKey()
        let again = try second.notificationKey()
        #expect(key.count == 32 && again == key, "every process shares the key")
        let n = try first.trackJob(Self.job("j1", secure: true, expires: Self.t0.addingTimeInterval(60)))
        var changed = Self.job("j1")
        changed.sentAt = Self.t0.addingTimeInterval(999)
        #expect(try second.trackJob(changed) == n, "a resume keeps the number")
        let read = try #require(try second.trackedJob(id: "j1"))
        #expect(read.number == n && read.secure && read.content == SecureJobContent(message: "secret j1") && read.sentAt == Self.t0)
        #expect(read.apps == ["default", "shop"] && read.platforms == [.apns, .web] && read.audience == "a || b" && read.file == "j1.json")
        #expect(try first.trackedJob(number: n)?.id == "j1")
        #expect(try first.trackedJob(number: n + 100) == nil)
        #expect(try first.trackJob(Self.job("j2")) != n)
    }

    @Test(arguments: RegistryBackend.allCases) func eventsAndWhatIsDeletedWhen(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        let old = try registry.trackJob(Self.job("old", secure: true, expires: Self.t0.addingTimeInterval(60)))
        let recent = try registry.trackJob(Self.job("recent"))
        let events = [StoredEvent(job: old, device: 1, platform: .apns, type: "received", app: "default", at: Self.t0),
                      StoredEvent(job: old, device: 1, platform: .apns, type: "received", app: "default", at: Self.t0),
                      StoredEvent(job: old, device: 2, platform: .web, type: "opened", app: "shop", at: Self.t0),
                      StoredEvent(job: recent, device: 1, platform: .apns, type: "received", app: "default", at: Self.t0)]
        #expect(try registry.recordEvents(events) == [true, false, true, true], "the second of two equal events in a batch is a duplicate")
        #expect(try registry.recordEvents(Array(events.prefix(1))) == [false])
        #expect(try registry.hasEvent(job: old, device: 2, platform: .web, type: "opened"))
        #expect(try !registry.hasEvent(job: old, device: 2, platform: .apns, type: "opened"))
        #expect(Set(try registry.eventCounts(job: old).map { "\($0.app) \($0.platform) \($0.type) \($0.count)" })
                == ["default apns received 1", "shop web opened 1"])
        // Ended 31 days ago with keep_days 30: its events go; its row stays until its content is gone.
        try registry.endTrackedJob(id: "old", at: Self.t0)
        try registry.endTrackedJob(id: "recent", at: Self.t0.addingTimeInterval(30 * 86_400))
        let cutoff = Self.t0.addingTimeInterval(31 * 86_400 - 30 * 86_400)
        #expect(try registry.purgeEvents(endedBefore: cutoff.addingTimeInterval(1)) == 2)
        #expect(try registry.eventCounts(job: old).isEmpty)
        #expect(try registry.eventCounts(job: recent).count == 1)
        #expect(try registry.trackedJob(id: "old") != nil, "its content is still there")
        #expect(try registry.eraseExpiredContent(now: Self.t0.addingTimeInterval(61)).map(\.file) == ["old.json"])
        #expect(try registry.purgeEvents(endedBefore: cutoff.addingTimeInterval(1)) == 0)
        #expect(try registry.trackedJob(id: "old") == nil, "an ended job with no content left and no events is gone")
        #expect(try registry.trackedJob(id: "recent")?.endedAt == Self.t0.addingTimeInterval(30 * 86_400))
        var tally = DeliveryTally()
        tally.targets = 3
        tally.routes[DeliveryTally.Route(app: "shop", platform: .web)] = { var c = DeliveryTally.Counts(); c.delivered = 2; c.failed = 1; return c }()
        try registry.saveDeliveries(id: "recent", tally)
        #expect(try registry.trackedJob(id: "recent")?.deliveries == tally)
    }

    /// When the next sweep has something to do: nothing tracked, never; then the earliest of a
    /// secure job's expiry and an ended job's `keep_days` anniversary; once the content is erased,
    /// the anniversary alone.
    @Test(arguments: RegistryBackend.allCases) func theNextSweepIsDueWhenSomethingIs(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        #expect(try registry.nextSweep(keepDays: 30) == nil)
        _ = try registry.trackJob(Self.job("plain"))
        #expect(try registry.nextSweep(keepDays: 30) == nil, "a job neither secure nor ended has nothing to sweep")
        _ = try registry.trackJob(Self.job("secret", secure: true, expires: Self.t0.addingTimeInterval(3600)))
        #expect(try registry.nextSweep(keepDays: 30) == Self.t0.addingTimeInterval(3600))
        try registry.endTrackedJob(id: "plain", at: Self.t0)
        #expect(try registry.nextSweep(keepDays: 30) == Self.t0.addingTimeInterval(3600))
        #expect(try registry.nextSweep(keepDays: 0) == Self.t0)
        _ = try registry.eraseExpiredContent(now: Self.t0.addingTimeInterval(3601))
        #expect(try registry.nextSweep(keepDays: 30) == Self.t0.addingTimeInterval(30 * 86_400))
    }
}
