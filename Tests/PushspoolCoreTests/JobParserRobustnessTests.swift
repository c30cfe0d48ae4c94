import Testing
@testable import PushspoolCore

/// Deterministic mutation fuzzing: whatever a sender drops into the spool, the parser returns a
/// job or a non-empty list of one-line problems; it never traps (a trap would stop the dispatcher).
@Suite struct JobParserRobustnessTests {
    /// SplitMix64, seeded, so a failure reproduces.
    struct Seeded {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let seeds = [
        #"{"id":"c1","tags":"(a || b) && !c","pns":["apns","gcm","wns"],"from":"bob","message":"hi & <bye>","title":"T","badge":1,"sound":"s","data":{"k":"v"},"ttl_seconds":60,"priority":"high","collapse_id":"x","not_before":"2026-11-22T09:30:00+01:00","payload":{"wns":"<badge value=\"1\"/>"}}"#,
        #"{"kind":"register","id":"i-1","platform":"apns","handle":"0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f","tags":["a","b"]}"#,
        #"{"kind":"unregister","handle":"https://x.notify.windows.com/?token=1"}"#,
    ]
    static let alphabet: [UInt8] = Array(#"{}[]":,\ 0123456789.-+eEtrufalsn"u&|!()<>/ab"#.utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF]

    @Test(arguments: 0..<seeds.count)
    func mutatedJobsNeverTrap(seedIndex: Int) {
        var random = Seeded(state: UInt64(seedIndex) &* 7919)
        let original = Array(Self.seeds[seedIndex].utf8)
        #expect(parseJob(Self.seeds[seedIndex]).problems == [])
        var parsed = 0
        for _ in 0..<3000 {
            var bytes = original
            for _ in 0...random.below(4) {
                let i = random.below(bytes.count)
                switch random.below(3) {
                case 0: bytes[i] = Self.alphabet[random.below(Self.alphabet.count)]
                case 1: bytes.remove(at: i)
                default: bytes.insert(Self.alphabet[random.below(Self.alphabet.count)], at: i)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            do {
                _ = try JobParser.parse(bytes, fileName: "fuzz.json")
                parsed += 1
            } catch {
                #expect(!error.problems.isEmpty)
                for problem in error.problems {
                    #expect(!problem.message.isEmpty)
                    #expect(!problem.description.contains("\n"), "\(problem)")
                }
            }
        }
        // Some mutations land in string contents and still parse; most must not.
        #expect(parsed > 0 && parsed < 3000)
    }
}
