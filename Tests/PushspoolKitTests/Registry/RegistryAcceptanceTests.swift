import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

@Suite struct RegistryAcceptanceTests {
    /// SplitMix64: a tiny seeded generator so the generated registry is the same on every run.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let deviceCount = 100_000
    /// Tags with how often a device carries each: common, middling and rare ones, so that the
    /// expressions below select anything from none to nearly all devices.
    static let vocabulary: [(String, Double)] = [
        ("follows_RedSox", 0.40), ("follows_Cardinals", 0.25), ("location_Boston", 0.30),
        ("location_NYC", 0.20), ("lang:en", 0.60), ("lang:fr", 0.10), ("lang:de", 0.05),
        ("beta", 0.08), ("vip", 0.02), ("username:alice", 0.001), ("username:bob", 0.001),
        ("group#7", 0.15), ("app.v2", 0.50),
    ]

    static let expressions: [String] = [
        "follows_RedSox",
        "!follows_RedSox",
        "username:alice",
        "follows_RedSox && location_Boston",
        "(follows_RedSox || follows_Cardinals) && location_Boston",
        "location_Boston && !follows_Cardinals",
        "lang:en || lang:fr || lang:de || vip || beta",
        "!(beta || vip) && (lang:fr || !location_NYC)",
        "vip || beta && !lang:en",
        "((follows_RedSox && (lang:en || !app.v2)) || (group#7 && !(location_NYC || lang:de)))",
        "!!username:bob || username:alice && !vip",
        "!(!(follows_Cardinals || (location_NYC && !(beta || (group#7 && lang:fr)))))",
        "nonexistent || (beta && !beta)",
        "!nonexistent",
    ]

    @Test(arguments: RegistryBackend.allCases)
    func countAgreesWithBruteForceOverAHundredThousandDevices(backend: RegistryBackend) throws {
        var rng = SeededGenerator(state: 20_261_122)
        var devices: [(platform: Platform, tags: Set<String>)] = []
        devices.reserveCapacity(Self.deviceCount)
        var jsonl = ""
        jsonl.reserveCapacity(Self.deviceCount * 110)
        for i in 0..<Self.deviceCount {
            let platform = Platform.allCases[Int(rng.next() % 3)]
            var tags: Set<String> = []
            for (tag, p) in Self.vocabulary where Double(rng.next() % 1_000_000) / 1_000_000 < p { tags.insert(tag) }
            devices.append((platform, tags))
            let tagList = tags.sorted().map { "\"\($0)\"" }.joined(separator: ",")
            let handle = switch platform {
            case .apns: String(format: "%064x", i)
            case .fcm: "h\(i)"
            case .wns: "https://db5.notify.windows.com/?token=h\(i)"
            case .web, .hms, .adm: ""   // not drawn: `% 3` picks the first three platforms
            }
            jsonl += #"{"id":"d\#(i)","platform":"\#(platform.rawValue)","handle":"\#(handle)","tags":[\#(tagList)]}"# + "\n"
        }
        let (dir, registry) = try RegistryFixture.make(on: backend)
        dir.write("devices.jsonl", jsonl)

        let started = Date()
        let imported = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl")).imported
        let importSeconds = Date().timeIntervalSince(started)
        #expect(imported == Self.deviceCount)

        let queryStart = Date()
        let platformSets: [Set<Platform>] = [Set(Platform.allCases), [.apns], [.fcm, .wns]]
        var nonTrivial = 0
        for (n, text) in Self.expressions.enumerated() {
            let e = try TagExpression.parse(text)
            let platforms = platformSets[n % platformSets.count]
            let expected = devices.filter { platforms.contains($0.platform) && e.matches($0.tags) }.count
            #expect(try registry.count(platforms: platforms, matching: e) == expected, "\(text) on \(platforms.sorted())")
            if expected > 0 && expected < Self.deviceCount / 2 { nonTrivial += 1 }
        }
        let querySeconds = Date().timeIntervalSince(queryStart)
        // The expressions must discriminate, or agreeing counts would prove little.
        #expect(nonTrivial >= 8)

        // Streaming returns exactly the brute-force ids, for a tag-driven and a scanning query.
        for text in ["(follows_RedSox || follows_Cardinals) && location_Boston", "!(beta || vip) && lang:fr"] {
            let e = try TagExpression.parse(text)
            let expected = devices.indices.filter { e.matches(devices[$0].tags) }.map { "d\($0)" }
            var streamed: [String] = []
            streamed.reserveCapacity(expected.count)
            try registry.forEach(platforms: Set(Platform.allCases), matching: e) { streamed.append($0.id); return true }
            #expect(streamed == expected, "\(text)")
        }
        print("registry acceptance (\(backend.rawValue)): import \(Self.deviceCount) in \(String(format: "%.2f", importSeconds)) s, "
              + "\(Self.expressions.count) counts in \(String(format: "%.2f", querySeconds)) s, "
              + "total \(String(format: "%.2f", Date().timeIntervalSince(started))) s")
    }
}
