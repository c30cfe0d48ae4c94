import Foundation
import Testing
import Synchronization
import PushspoolCore
@testable import PushspoolKit

/// The one registration path against a real SQLite registry in a temporary folder, with a hub
/// that records the installation writes it is given (and refuses them when told to).
@Suite struct RegistrationServiceTests {
    /// A hub keeping installations of `platforms`: records each change; `.rejected` while `failing`.
    final class RecordingHub: PushProvider, InstallationStore, @unchecked Sendable {
        let name = "azure"
        let platforms: Set<Platform>
        let changes = Mutex<[InstallationChange]>([])
        let failing = Atomic<Bool>(false)
        init(_ platforms: Set<Platform>) { self.platforms = platforms }
        var resolvesTags: Bool { true }
        var installations: (any InstallationStore)? { self }
        func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) { completion(ProviderResult(.rejected)) }
        func shutdown() {}
        func serves(_ platform: Platform) -> Bool { platforms.contains(platform) }
        func apply(_ change: InstallationChange, completion: @escaping @Sendable (ProviderResult) -> Void) {
            changes.withLock { $0.append(change) }
            completion(failing.load(ordering: .relaxed) ? ProviderResult(.rejected, code: "400", reason: "no") : ProviderResult(.delivered))
        }
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func make(hubFor platforms: Set<Platform> = []) throws -> (TempDir, SQLiteRegistry, RegistrationService, RecordingHub) {
        let (dir, registry) = try RegistryFixture.make()
        let hub = RecordingHub(platforms)
        let routes = Dictionary(uniqueKeysWithValues: platforms.map { ($0, ProviderState(provider: hub)) })
        let writer = platforms.isEmpty ? nil : InstallationWriter(routes: routes, pool: WorkerPool(concurrency: 1, policy: RetryPolicy(maxAttempts: 1)))
        return (dir, registry, RegistrationService(registry: registry, hub: writer), hub)
    }

    @Test func registersAndReusesTheHandlesID() throws {
        let (_, registry, service, _) = try make()
        let first = try service.register(RegistryFixture.reg(nil, .fcm, "tok-1", ["a"]), now: Self.now)
        #expect(first.device.id.count == 36 && first.device.id == first.device.id.lowercased())
        #expect(first.movedFrom == nil && first.hub.isEmpty && !first.hubFailed)
        let again = try service.register(RegistryFixture.reg(nil, .fcm, "tok-1", ["b"]), now: Self.now)
        #expect(again.device.id == first.device.id)
        #expect(try registry.device(id: first.device.id)?.tags == ["b"])
    }

    @Test func aHandleMovesAndTheHubDeletesTheOldInstallationFirst() throws {
        let (_, registry, service, hub) = try make(hubFor: [.fcm])
        _ = try service.register(RegistryFixture.reg("old", .fcm, "tok-1"), now: Self.now)
        let moved = try service.register(RegistryFixture.reg("new", .fcm, "tok-1", ["t"]), now: Self.now)
        #expect(moved.movedFrom == "old")
        #expect(try registry.device(id: "old") == nil)
        #expect(hub.changes.withLock { $0 }.map(\.installationID) == ["old", "old", "new"])
        #expect(moved.hub.map(\.change) == [.delete(id: "old"), .put(moved.device)])
        #expect(!moved.hubFailed)
    }

    @Test func aHubFailureIsReportedAndTheRegistryKeepsTheChange() throws {
        let (_, registry, service, hub) = try make(hubFor: [.wns])
        hub.failing.store(true, ordering: .relaxed)
        let change = try service.register(RegistryFixture.reg("w1", .wns, "https://x.notify.windows.com/?t=1"), now: Self.now)
        #expect(change.hubFailed)
        #expect(try registry.device(id: "w1") != nil)
        // A platform the hub does not serve: no hub write at all.
        #expect(try service.register(RegistryFixture.reg("f1", .fcm, "tok"), now: Self.now).hub.isEmpty)
    }

    @Test func unregisterByIDOrHandle() throws {
        let (_, _, service, hub) = try make(hubFor: [.apns])
        _ = try service.register(RegistryFixture.reg("my phone", .fcm, "tok-1"), now: Self.now)
        let removed = try #require(try service.unregister(.id("my phone"), now: Self.now))
        #expect(removed.device.handle == "tok-1" && removed.hub.isEmpty)
        #expect(hub.changes.withLock { $0 }.isEmpty)   // fcm is not hub-routed here
        // Unknown here, but perhaps still on the hub: the DELETE goes out, nil comes back.
        #expect(try service.unregister(.id("my phone"), now: Self.now) == nil)
        #expect(try service.unregister(.id("gone"), now: Self.now) == nil)
        #expect(hub.changes.withLock { $0 } == [.delete(id: "my phone"), .delete(id: "gone")])
        _ = try service.register(RegistryFixture.reg("a", .apns, String(repeating: "ab", count: 32)), now: Self.now)
        #expect(try service.unregister(.handle(String(repeating: "ab", count: 32)), now: Self.now)?.device.id == "a")
        #expect(try service.unregister(.handle("nobody"), now: Self.now) == nil)
    }

    @Test func invalidRegistrationsNameTheField() throws {
        let (_, _, service, _) = try make()
        let error = #expect(throws: RegistrationError.self) { try service.register(RegistryFixture.reg("a/b", .fcm, "t"), now: Self.now) }
        #expect(error?.kind == .invalid(field: "id"))
        #expect(error?.message == #"id: must not contain "/" (ids appear in URL paths)"#)
    }

    @Test func reservationsAreConsumedByARegistrationOrReleasedByAnUnregistration() throws {
        let (_, _, service, _) = try make()
        let id = try service.reserveID(owner: "alice", now: Self.now)
        #expect(id.count == 36 && id == id.lowercased())
        #expect(try service.reservation(id: id, now: Self.now.addingTimeInterval(3600)) == "alice")
        #expect(try service.reservation(id: id, now: Self.now.addingTimeInterval(IDReservation.lifetime)) == nil)
        _ = try service.register(Registration(id: id, platform: .fcm, handle: "t", tags: []), now: Self.now)
        #expect(try service.reservation(id: id, now: Self.now) == nil)
        let other = try service.reserveID(owner: "bob", now: Self.now)
        #expect(try service.unregister(.id(other), now: Self.now) == nil)
        #expect(try service.reservation(id: other, now: Self.now) == nil)
    }

    /// Another process holding the write lock past the wait: `busy`, the job's "stays in active/".
    @Test func aLockedRegistryIsBusy() throws {
        let (dir, registry, service, _) = try make()
        try registry.locked { db in try db.execute("PRAGMA busy_timeout = 50") }
        let other = try SQLiteDatabase(path: dir.path("registry.sqlite"))
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE")
        let error = #expect(throws: RegistrationError.self) { try service.register(RegistryFixture.reg("x", .fcm, "t"), now: Self.now) }
        #expect(error?.kind == .busy)
        guard let error, case .interrupted = RegistrationExecutor.failure(error) else {
            Issue.record("a busy registry must leave the job in active/")
            return
        }
        try other.execute("ROLLBACK")
    }
}
