import Testing
import PushspoolCore

/// The `apns-id` of a notification: the same for the same job and device in any process, a
/// well-formed version 8 UUID, and different for different pairs.
@Suite struct StableUUIDTests {
    static func isUUIDv8(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count == 36 else { return false }
        for (i, c) in b.enumerated() {
            if [8, 13, 18, 23].contains(i) { if c != UInt8(ascii: "-") { return false }; continue }
            guard (0x30...0x39).contains(c) || (0x61...0x66).contains(c) else { return false }
        }
        return b[14] == UInt8(ascii: "8") && [UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(b[19])
    }

    @Test func sameInputsSameIDAcrossRuns() {
        // Fixed here so that a change of derivation is seen (a resumed job's resends would carry new ids).
        #expect(StableUUID.make("job1", "dev-1") == StableUUID.make("job1", "dev-1"))
        #expect(StableUUID.make("job1", "dev-1") == "4ae8cdd2-3afc-8397-9c41-c51b10d1ca60")
    }

    @Test func wellFormedVersion8() {
        for i in 0..<1000 { #expect(Self.isUUIDv8(StableUUID.make("job", "d\(i)"))) }
        #expect(Self.isUUIDv8(StableUUID.make("", "")))
        #expect(Self.isUUIDv8(StableUUID.make("café", "📱")))
    }

    @Test func partsAreSeparated() {
        #expect(StableUUID.make("ab", "c") != StableUUID.make("a", "bc"))
        #expect(StableUUID.make("a", "") != StableUUID.make("", "a"))
    }

    @Test func noCollisionsOverManyPairs() {
        var seen = Set<String>()
        for job in ["j1", "j2", "campaign-2026-11"] {
            for i in 0..<100_000 { seen.insert(StableUUID.make(job, "d\(i)")) }
        }
        #expect(seen.count == 300_000)
    }
}
