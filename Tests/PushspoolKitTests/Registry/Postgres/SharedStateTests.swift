import Foundation
import Synchronization
import Testing
import PushspoolCore
@testable import PushspoolKit

/// What several hosts share through the PostgreSQL registry besides devices: job-id claims and
/// short-lived credentials. Two registries or caches on one database stand in for two hosts.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct SharedStateTests {
    @Test func theFirstOwnerToClaimAJobIDKeepsIt() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let hostA = try PostgresRegistry(uri: uri), hostB = try PostgresRegistry(uri: uri)
        #expect(try hostA.claimJob(id: "job-1", owner: "a /spool"))
        #expect(try !hostB.claimJob(id: "job-1", owner: "b /spool"))
        #expect(try hostA.claimJob(id: "job-1", owner: "a /spool"))   // a resume on host a
        #expect(try hostB.claimJob(id: "job-2", owner: "b /spool"))
        // Ids that differ only by case are one id (a spool folds them too).
        #expect(try hostA.claimJob(id: "Case-1", owner: "a /spool"))
        #expect(try !hostB.claimJob(id: "case-1", owner: "b /spool"))
        #expect(try !hostB.claimJob(id: "CASE-1", owner: "b /spool"))
    }

    @Test func concurrentClaimsHaveExactlyOneWinner() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let hosts = try (0..<4).map { _ in try PostgresRegistry(uri: uri) }
        let wins = Mutex<[String: Int]>([:])
        DispatchQueue.concurrentPerform(iterations: 4) { h in
            for j in 0..<50 {
                if (try? hosts[h].claimJob(id: "job-\(j)", owner: "host-\(h)")) == true {
                    wins.withLock { $0["job-\(j)", default: 0] += 1 }
                }
            }
        }
        let counts = wins.withLock { $0 }
        #expect(counts.count == 50 && counts.values.allSatisfy { $0 == 1 })
    }

    /// Two hosts register the same token under different installation ids at the same moment:
    /// the loser of the race retries, and one row holds the handle in the end.
    @Test func concurrentRegistrationsOfOneHandleLeaveOneRow() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let hosts = try (0..<2).map { _ in try PostgresRegistry(uri: uri) }
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for round in 0..<25 {
                do {
                    try hosts[i % 2].upsert(RegistryFixture.reg("inst-\(i)", .fcm, "shared-\(round)", ["t\(i)"]))
                } catch {
                    failures.add("\(error)")
                }
            }
        }
        #expect(failures.all.isEmpty)
        // Each installation ends on its last handle, shared-24, or lost it to another one since.
        let holder = try #require(try hosts[1].device(handle: "shared-24"))
        #expect(holder.id.hasPrefix("inst-"))
        let c = try PostgresConnection(uri: uri)
        let rows = try c.query("SELECT count(*), count(DISTINCT handle), count(DISTINCT id) FROM devices")
        #expect(rows.int64(0, 0) == rows.int64(0, 1) && rows.int64(0, 0) == rows.int64(0, 2) && rows.int64(0, 0) <= 8)
    }

    /// A rare required tag is found through the GIN index, page by page; a common one in `seq`
    /// order (the planner alone would scan the whole table in order for `username:alice`).
    @Test func rareTagsAreFoundThroughTheTagIndex() throws {
        let (dir, registry) = try RegistryFixture.make(on: .postgres)
        let pg = try #require(registry as? PostgresRegistry)
        var jsonl = ""
        for i in 0..<30_000 { jsonl += #"{"id":"d\#(i)","platform":"fcm","handle":"h\#(i)","tags":["common","u\#(i % 5000)"]}"# + "\n" }
        dir.write("d.jsonl", jsonl)
        _ = try pg.importJSONL(contentsOf: dir.url.appendingPathComponent("d.jsonl"))
        #expect(try pg.isSparse(.tag("u42"), limit: 1000))
        #expect(try pg.isSparse(.and(.tag("u42"), .not(.tag("common"))), limit: 1000))
        #expect(try !pg.isSparse(.tag("common"), limit: 1000))
        #expect(try !pg.isSparse(.not(.tag("u42")), limit: 1000))
        var ids: [String] = []
        try pg.forEach(platforms: [.fcm], matching: .tag("u42"), pageSize: 2) { ids.append($0.id); return true }
        #expect(ids == (0..<6).map { "d\($0 * 5000 + 42)" })
        var sparse = PostgresAudienceQuery(platforms: [.fcm], expression: .tag("u42"))
        sparse.sparse = true
        let c = try PostgresConnection(uri: try #require(Self.uri(of: pg)))
        let plan = try c.queryOnce("EXPLAIN " + sparse.pageSQL, sparse.pageParameters(after: 0, limit: 1000))
        let text = (0..<plan.count).compactMap { plan.text($0, 0) }.joined(separator: "\n")
        #expect(text.contains("devices_by_tag"), "\(text)")
    }

    static func uri(of registry: PostgresRegistry) -> String? { registry.pool.uri }

    @Test func aSingleHostRegistryClaimsEveryID() throws {
        let (_, registry) = try RegistryFixture.make()
        #expect(try registry.claimJob(id: "j", owner: "a"))
        #expect(try registry.claimJob(id: "j", owner: "b"))
    }

    final class ManualClock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(_ s: Double) { now.withLock { $0 = $0.addingTimeInterval(s) } }
        var date: Date { now.withLock { $0 } }
    }

    /// APNs: one provider token per key across hosts; renewed after 50 min, never within 20.
    static let apnsPolicy = RenewalPolicy(renewAfter: 50 * 60, expirySkew: 0, minInterval: 20 * 60)

    @Test func twoHostsShareOneTokenPerKeyAndRenewItOnce() throws {
        let uri = try RegistryFixture.postgresDatabase()
        try PostgresRegistry(uri: uri).close()   // the schema
        let clock = ManualClock()
        let hostA = CredentialCache(store: PostgresCredentialStore(uri: uri), clock: { clock.date })
        let hostB = CredentialCache(store: PostgresCredentialStore(uri: uri), clock: { clock.date })
        let made = Atomic<Int>(0)
        @Sendable func make() -> CachedCredential {
            let n = made.add(1, ordering: .relaxed).newValue
            return CachedCredential(token: "jwt-\(n)", issuedAt: clock.date, expiresAt: clock.date.addingTimeInterval(3600))
        }
        let a = try hostA.credential(for: "apns-TEAM-KEY", policy: Self.apnsPolicy, make: make)
        let b = try hostB.credential(for: "apns-TEAM-KEY", policy: Self.apnsPolicy, make: make)
        #expect(a.token == "jwt-1" && b.token == "jwt-1" && made.load(ordering: .relaxed) == 1)

        // Apple refuses it as expired 5 minutes in: too young to replace (TooManyProviderTokenUpdates).
        clock.advance(5 * 60)
        #expect(!hostB.invalidate(key: "apns-TEAM-KEY", token: "jwt-1", policy: Self.apnsPolicy))
        #expect(try hostA.credential(for: "apns-TEAM-KEY", policy: Self.apnsPolicy, make: make).token == "jwt-1")

        // 50 minutes: both hosts, many threads, ask at once; one new token for all.
        clock.advance(46 * 60)
        let tokens = Mutex<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            let cache = i % 2 == 0 ? hostA : hostB
            if let t = try? cache.credential(for: "apns-TEAM-KEY", policy: Self.apnsPolicy, make: make).token {
                tokens.withLock { _ = $0.insert(t) }
            }
        }
        #expect(tokens.withLock { $0 } == ["jwt-2"])
        #expect(made.load(ordering: .relaxed) == 2)

        // Old enough: an invalidation on one host makes the other renew, once.
        clock.advance(21 * 60)
        #expect(hostA.invalidate(key: "apns-TEAM-KEY", token: "jwt-2", policy: Self.apnsPolicy))
        #expect(hostB.invalidate(key: "apns-TEAM-KEY", token: "jwt-2", policy: Self.apnsPolicy))
        #expect(try hostB.credential(for: "apns-TEAM-KEY", policy: Self.apnsPolicy, make: make).token == "jwt-3")
        #expect(try hostA.credential(for: "apns-TEAM-KEY", policy: Self.apnsPolicy, make: make).token == "jwt-3")
        #expect(made.load(ordering: .relaxed) == 3)
        let c = try PostgresConnection(uri: uri)
        #expect(try c.query("SELECT token FROM credentials WHERE key = $1", ["apns-TEAM-KEY"]).text(0, 0) == "jwt-3")
    }

    /// Another host holds the key's advisory lock (stuck in its fetch): this one waits only up to
    /// the bound, then makes its own in memory; once the lock is free, renewals are shared again.
    @Test func anotherHostsLockIsWaitedForOnlyUpToTheBound() throws {
        let uri = try RegistryFixture.postgresDatabase()
        try PostgresRegistry(uri: uri).close()   // the schema
        let otherHost = try PostgresConnection(uri: uri)
        try otherHost.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", ["pushspool-credential:k"])
        let cache = CredentialCache(store: PostgresCredentialStore(uri: uri), lockWait: 0.5)
        let credential = { (token: String) in CachedCredential(token: token, issuedAt: Date(), expiresAt: Date().addingTimeInterval(3600)) }
        let start = Date()
        #expect(try cache.credential(for: "k", policy: RenewalPolicy()) { credential("own") }.token == "own")
        let waited = Date().timeIntervalSince(start)
        #expect(waited >= 0.45 && waited < 5, "waited \(waited) s")
        #expect(try otherHost.query("SELECT count(*) FROM credentials").int64(0, 0) == 0)

        try otherHost.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", ["pushspool-credential:k"])
        let hostB = CredentialCache(store: PostgresCredentialStore(uri: uri), lockWait: 0.5)
        #expect(try hostB.credential(for: "k", policy: RenewalPolicy()) { credential("shared") }.token == "shared")
        #expect(try otherHost.query("SELECT token FROM credentials WHERE key = 'k'").text(0, 0) == "shared")
    }

    @Test func anUnreachableStoreFallsBackToMemory() throws {
        let cache = CredentialCache(store: PostgresCredentialStore(uri: "postgresql:///x?host=/nonexistent&port=1&connect_timeout=1"))
        var made = 0
        let make = { () -> CachedCredential in
            made += 1
            return CachedCredential(token: "t\(made)", issuedAt: Date(), expiresAt: Date().addingTimeInterval(3600))
        }
        #expect(try cache.credential(for: "k", policy: RenewalPolicy(), make: make).token == "t1")
        #expect(try cache.credential(for: "k", policy: RenewalPolicy(), make: make).token == "t1")
        #expect(made == 1)
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try CredentialCache(store: nil).credential(for: "k", policy: RenewalPolicy()) { throw Refused() }
        }
    }
}
