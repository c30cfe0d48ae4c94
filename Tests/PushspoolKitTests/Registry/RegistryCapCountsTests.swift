import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Frequency cap counts in the registry (`FrequencyCapCounts`), the same on SQLite and
/// PostgreSQL: a device over its cap is refused and not counted, a job counts a device once
/// however often it reserves it (a resume), its own count never caps it, and old counts expire.
@Suite struct RegistryCapCountsTests {
    @Test(arguments: RegistryBackend.allCases) func countsCapAndExpire(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        for i in 0..<3 { try registry.upsert(RegistryFixture.reg("d\(i)", .fcm, "h\(i)")) }
        var keys: [Int64] = []
        try registry.forEach(platforms: [.fcm], matching: nil, after: 0) { _, key in keys.append(key); return true }
        try #require(keys.count == 3)
        let cap = FrequencyCap(max: 2, perHours: 24)
        let all = keys.map { CapCandidate(key: $0, cap: cap) }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(try registry.reserveCapped(job: "a", devices: all, now: now) == [])
        #expect(try registry.reserveCapped(job: "a", devices: all, now: now) == [], "a job's own count never caps it")
        #expect(try registry.reserveCapped(job: "b", devices: Array(all.prefix(2)), now: now) == [])
        // d0 and d1 had a and b: over; d2 had a only.
        #expect(try registry.reserveCapped(job: "c", devices: all, now: now) == Set(keys.prefix(2)))
        // b resumed: d0 and d1 counted for it already; d2 had a and c meanwhile.
        #expect(try registry.reserveCapped(job: "b", devices: all, now: now) == [keys[2]])
        #expect(try registry.reserveCapped(job: "d", devices: all, now: now) == Set(keys))
        // A day and an hour later the counts are outside the window, then pruned.
        let later = now.addingTimeInterval(25 * 3600)
        #expect(try registry.reserveCapped(job: "e", devices: all, now: later) == [])
        #expect(try registry.pruneCapCounts(before: later.addingTimeInterval(-24 * 3600)) == 6)   // a ×3, b ×2, c ×1
        #expect(try registry.reserveCapped(job: "f", devices: all, now: later) == [])
        #expect(try registry.reserveCapped(job: "g", devices: all, now: later) == Set(keys), "e and f: two in the window")
    }
}
