import Dispatch
import Foundation
import Synchronization
import Testing
import PushspoolCore
@testable import PushspoolKit

@Suite struct RegistryQueryTests {
    static let all = Set(Platform.allCases)

    /// A small fixed registry: id, platform, tags.
    static let fixture: [(String, Platform, [String])] = [
        ("d1", .apns, ["follows_RedSox", "location_Boston"]),
        ("d2", .fcm, ["follows_Cardinals", "location_Boston"]),
        ("d3", .wns, ["follows_RedSox", "follows_Cardinals"]),
        ("d4", .apns, ["location_NYC"]),
        ("d5", .fcm, []),
        ("d6", .apns, ["username:alice", "follows_RedSox"]),
    ]

    func fixtureRegistry(_ backend: RegistryBackend) throws -> (TempDir, any RegistryDatabase) {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        for (id, platform, tags) in Self.fixture {
            try registry.upsert(RegistryFixture.reg(id, platform, "handle-\(id)", tags))
        }
        return (dir, registry)
    }

    static let queries: [(String?, Set<Platform>, [String])] = [
        (nil, all, ["d1", "d2", "d3", "d4", "d5", "d6"]),
        (nil, [.fcm], ["d2", "d5"]),
        ("username:alice", all, ["d6"]),
        ("username:alice", [.fcm, .wns], []),
        ("follows_RedSox", all, ["d1", "d3", "d6"]),
        ("follows_RedSox", [.apns], ["d1", "d6"]),
        ("!follows_RedSox", all, ["d2", "d4", "d5"]),
        ("(follows_RedSox || follows_Cardinals) && location_Boston", all, ["d1", "d2"]),
        ("location_Boston && !follows_Cardinals", all, ["d1"]),
        ("follows_RedSox && follows_Cardinals", all, ["d3"]),
        ("follows_RedSox || location_NYC || username:alice", all, ["d1", "d3", "d4", "d6"]),
        ("!(follows_RedSox || location_Boston) || username:alice", all, ["d4", "d5", "d6"]),
        ("(a || follows_RedSox) && (b || follows_RedSox)", all, ["d1", "d3", "d6"]),
        ("!!location_NYC", all, ["d4"]),
        ("nobody", all, []),
        ("location_Boston || !location_Boston", [.wns], ["d3"]),
    ]

    @Test(arguments: RegistryBackend.allCases, queries.indices)
    func forEachAndCountAgree(backend: RegistryBackend, index: Int) throws {
        let (expression, platforms, expected) = Self.queries[index]
        let (_, registry) = try fixtureRegistry(backend)
        let e = try expression.map { try TagExpression.parse($0) }
        var ids: [String] = []
        try registry.forEach(platforms: platforms, matching: e, pageSize: 2) { ids.append($0.id); return true }
        #expect(ids == expected)
        #expect(try registry.count(platforms: platforms, matching: e) == expected.count)
    }

    /// A chunk of the shared queue reads the devices of its key range only, and hears of its
    /// last page before that page's devices are handed out (the next chunk starts then).
    @Test(arguments: RegistryBackend.allCases) func aKeyRangeReadsItsDevicesAndToldOfItsLastPage(backend: RegistryBackend) throws {
        let (_, registry) = try fixtureRegistry(backend)
        var keys: [Int64] = []
        try registry.forEach(platforms: Self.all, matching: nil, after: 0) { _, key in keys.append(key); return true }
        func read(after: Int64, through: Int64) throws -> [String] {
            var seen: [String] = []
            try registry.forEach(platforms: Self.all, apps: nil, tokenKind: nil, matching: nil, pageSize: 2, after: after, through: through,
                                 lastPage: { seen.append("last") }) { device, _ in seen.append(device.id); return true }
            return seen
        }
        // Ends on a full page: no page after it is read.
        #expect(try read(after: keys[0], through: keys[4]) == ["d2", "d3", "last", "d4", "d5"])
        // Ends inside a page, and the range's end is not past the audience's.
        #expect(try read(after: 0, through: keys[2]) == ["d1", "d2", "last", "d3"])
        // Unbounded: a full page may not be the last; the empty one after it says so.
        #expect(try read(after: keys[3], through: .max) == ["d5", "d6", "last"])
        #expect(try read(after: keys[5], through: .max) == ["last"])
    }

    /// The page loop itself: a stop from the body reads no further page.
    @Test func keysetPagesStopWhenTheBodyStops() throws {
        var fetched: [Int64] = []
        var lastPages = 0
        try KeysetPages.run(after: 0, through: 100, limit: 3, lastPage: { lastPages += 1 }, key: { $0 }, fetch: { after in
            fetched.append(after)
            return Array((after + 1)...(after + 3))
        }) { $0 < 5 }
        #expect(fetched == [0, 3])
        #expect(lastPages == 0)
    }

    @Test(arguments: RegistryBackend.allCases) func noPlatformsSelectsNothing(backend: RegistryBackend) throws {
        let (_, registry) = try fixtureRegistry(backend)
        var called = false
        try registry.forEach(platforms: [], matching: nil) { _ in called = true; return true }
        #expect(!called)
        #expect(try registry.count(platforms: [], matching: nil) == 0)
    }

    @Test(arguments: RegistryBackend.allCases) func streamedDevicesCarryAllTheirFields(backend: RegistryBackend) throws {
        let (_, registry) = try fixtureRegistry(backend)
        var seen: [Device] = []
        try registry.forEach(platforms: [.apns], matching: .tag("username:alice")) { seen.append($0); return true }
        #expect(seen.map(\.handle) == ["handle-d6"])
        #expect(seen.first?.tags == ["follows_RedSox", "username:alice"])
        #expect(seen == [try #require(try registry.device(id: "d6"))])
    }

    @Test func drivingTagIsChosenOnlyWhenImplied() throws {
        let cases: [(String, String?)] = [
            ("a", "a"), ("!a", nil), ("a && !b", "a"), ("!a && b", "b"), ("a || b", nil),
            ("(a && x) || (a && y)", "a"), ("(a || b) && c", "c"),
        ]
        for (text, tag) in cases {
            #expect(AudienceQuery.requiredTag(try TagExpression.parse(text)) == tag, "\(text)")
        }
    }

    @Test(arguments: RegistryBackend.allCases, [1, 7, 5, 25, 1000])
    func paginationCoversEveryDeviceOnce(backend: RegistryBackend, pageSize: Int) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        for i in 0..<25 {
            try registry.upsert(RegistryFixture.reg("dev-\(i)", .fcm, "h\(i)", i % 2 == 0 ? ["even", "all"] : ["all"]))
        }
        var ids: [String] = []
        try registry.forEach(platforms: [.fcm], matching: nil, pageSize: pageSize) { ids.append($0.id); return true }
        #expect(ids == (0..<25).map { "dev-\($0)" })

        var even: [String] = []   // driven by the `even` tag's index slice
        try registry.forEach(platforms: [.fcm], matching: .tag("even"), pageSize: pageSize) { even.append($0.id); return true }
        #expect(even == stride(from: 0, to: 25, by: 2).map { "dev-\($0)" })

        var odd: [String] = []    // a full scan with a NOT filter
        try registry.forEach(platforms: [.fcm], matching: .not(.tag("even")), pageSize: pageSize) { odd.append($0.id); return true }
        #expect(odd == stride(from: 1, to: 25, by: 2).map { "dev-\($0)" })
    }

    @Test(arguments: RegistryBackend.allCases) func returningFalseStopsTheStream(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        for i in 0..<20 { try registry.upsert(RegistryFixture.reg("dev-\(i)", .apns, "h\(i)", ["t"])) }
        var calls = 0
        try registry.forEach(platforms: [.apns], matching: .tag("t"), pageSize: 3) { _ in
            calls += 1
            return calls < 5
        }
        #expect(calls == 5)
    }

    @Test(arguments: RegistryBackend.allCases) func errorsThrownByTheBodyPropagate(backend: RegistryBackend) throws {
        let (_, registry) = try fixtureRegistry(backend)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try registry.forEach(platforms: Self.all, matching: nil) { _ in throw Stop() }
        }
        // The lock was released: the registry still works.
        #expect(try registry.count(platforms: Self.all, matching: nil) == 6)
    }

    /// The engine prunes gone devices and the CLI registers new ones while a job streams its
    /// audience; the body re-entering the registry would deadlock if the lock were held.
    @Test(arguments: RegistryBackend.allCases) func writesDuringAStreamDoNotDeadlock(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        for i in 0..<50 { try registry.upsert(RegistryFixture.reg("dev-\(i)", .apns, "h\(i)", ["t"])) }
        let writer = DispatchGroup()
        DispatchQueue.global().async(group: writer) {
            for i in 0..<200 { _ = try? registry.upsert(RegistryFixture.reg("late-\(i)", .fcm, "late-h\(i)", ["t"])) }
        }
        var seen = 0
        try registry.forEach(platforms: [.apns], matching: .tag("t"), pageSize: 4) { device in
            seen += 1
            // Same thread, inside the body: prune this one and register a replacement.
            try registry.removeGone(id: device.id, handle: device.handle, since: nil)
            try registry.upsert(RegistryFixture.reg("new-\(device.id)", .wns, "new-\(device.handle)", ["u"]))
            return true
        }
        writer.wait()
        #expect(seen == 50)
        #expect(try registry.count(platforms: [.apns], matching: nil) == 0)
        #expect(try registry.count(platforms: [.wns], matching: .tag("u")) == 50)
        #expect(try registry.count(platforms: [.fcm], matching: .tag("t")) == 200)
    }

    @Test(arguments: RegistryBackend.allCases) func longOrChainsStayWithinSQLiteLimits(backend: RegistryBackend) throws {
        let (_, registry) = try fixtureRegistry(backend)
        // 1200 operands would nest 1200 levels deep unflattened; SQLite's limit is 1000.
        let text = (0..<1200).map { "x\($0) || !(y\($0) && z\($0))" }.joined(separator: " || ")
        let e = try TagExpression.parse(text)
        #expect(try registry.count(platforms: Self.all, matching: e) == 6)
        let tagsOnly = try TagExpression.parse((0..<1200).map { "x\($0)" }.joined(separator: " || ") + " || location_NYC")
        #expect(try registry.count(platforms: Self.all, matching: tagsOnly) == 1)
    }

    @Test(arguments: RegistryBackend.allCases) func manyThreadsShareOneRegistry(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        let failures = RegistryTestFailures()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<50 {
                do {
                    try registry.upsert(RegistryFixture.reg("w\(worker)-\(i)", .fcm, "h-\(worker)-\(i)", ["w\(worker)", "all"]))
                    _ = try registry.count(platforms: [.fcm], matching: .tag("w\(worker)"))
                } catch {
                    failures.add("\(error)")
                }
            }
        }
        #expect(failures.all.isEmpty)
        #expect(try registry.count(platforms: [.fcm], matching: .tag("all")) == 400)
        #expect(try registry.count(platforms: [.fcm], matching: .tag("w3")) == 50)
    }

    /// Two connections to one file stand in for two pushspool processes (cron overlap, or the
    /// CLI registering while a dispatcher prunes): BEGIN IMMEDIATE plus the busy timeout make
    /// writers queue instead of failing with "database is locked".
    @Test func twoConnectionsWriteConcurrently() throws {
        let (dir, first) = try RegistryFixture.make()
        let second = try SQLiteRegistry(path: dir.path("registry.sqlite"))
        let failures = RegistryTestFailures()
        DispatchQueue.concurrentPerform(iterations: 2) { n in
            let registry = n == 0 ? first : second
            for i in 0..<150 {
                do {
                    try registry.upsert(RegistryFixture.reg("c\(n)-\(i)", .apns, "h\(n)-\(i)", ["c\(n)"]))
                    var seen = 0
                    try registry.forEach(platforms: [.apns], matching: .tag("c\(n)"), pageSize: 64) { _ in seen += 1; return true }
                    if seen != i + 1 { failures.add("connection \(n) saw \(seen) of its \(i + 1) devices") }
                } catch {
                    failures.add("\(error)")
                }
            }
        }
        #expect(failures.all.isEmpty)
        #expect(try first.count(platforms: [.apns], matching: nil) == 300)
    }
}

/// Collects failures from worker threads for one assertion afterwards.
private final class RegistryTestFailures: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ s: String) { list.withLock { $0.append(s) } }
    var all: [String] { list.withLock { $0 } }
}
