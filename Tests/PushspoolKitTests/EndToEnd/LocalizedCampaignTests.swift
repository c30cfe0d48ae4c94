import Foundation
import Testing

/// A localized campaign through the real binary: every device receives exactly one text, in its
/// language's best match (exact, then primary subtag) or the job's default — on a direct route
/// (the sandbox outbox) and on the hub route (one send per platform and text, each narrowed by
/// `lang:` tags, evaluated by the strict fake hub against its installations).
@Suite(.enabled(if: Paths.nodeAvailable), .serialized) struct LocalizedCampaignTests {
    /// Device languages and the text each must get.
    static let languages: [(lang: String?, text: String)] = [
        ("fr", "From bob: salut"), ("fr-CA", "From bob: salut"), ("es", "From bob: hola"), ("es-MX", "From bob: hola"),
        ("pt-BR", "From bob: olá"), ("pt", "From bob: hi"), ("de", "From bob: hallo"), ("it", "From bob: hi"),
        (nil, "From bob: hi"),
    ]
    static let job = """
        {"id": "loc", "tags": "campaign:spring", "pns": ["apns", "fcm"], "from": "bob", "message": "hi",
         "localized": {"fr": {"message": "salut"}, "es": {"message": "hola"}, "pt-br": {"message": "olá"},
                       "de": {"message": "hallo", "title": "Neu"}}}
        """

    /// 1,260 devices over both platforms, every language of `languages`; returns id → text.
    static func devices(_ dir: TempDir) -> [String: String] {
        var lines = "", expected: [String: String] = [:]
        for i in 0..<1_260 {
            let (lang, text) = languages[i % languages.count]
            let platform = i % 2 == 0 ? "apns" : "fcm"
            let handle = platform == "apns" ? String(format: "%064x", i) : "tok-\(i)"
            let langField = lang.map { #","lang":"\#($0)""# } ?? ""
            lines += #"{"id":"d\#(i)","platform":"\#(platform)","handle":"\#(handle)","tags":["campaign:spring"]\#(langField)}"# + "\n"
            expected["d\(i)"] = text
        }
        // Devices outside the audience get nothing.
        lines += #"{"id":"other","platform":"fcm","handle":"tok-other","tags":["campaign:fall"],"lang":"fr"}"# + "\n"
        dir.write("devices.jsonl", lines)
        return expected
    }

    static func text(ofPayload payload: Any?) -> String? {
        guard let p = payload as? [String: Any] else { return nil }
        if let aps = p["aps"] as? [String: Any] {
            if let alert = aps["alert"] as? String { return alert }
            return (aps["alert"] as? [String: Any])?["body"] as? String
        }
        let message = p["message"] as? [String: Any]
        return (message?["data"] as? [String: Any])?["message"] as? String
    }

    @Test func directRouteGivesEachDeviceItsOneText() throws {
        let dir = TempDir("localized")
        dir.write("pushspool.json", #"{"spool": "spool"}"#)
        let expected = Self.devices(dir)
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        try initSpool(common)
        var r = try runPushspool(["import"] + common + [dir.path("devices.jsonl")], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        dir.write("spool/incoming/loc.json", Self.job)
        r = try runPushspool(["run", "--once"] + common, cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")

        let lines = dir.jsonLines("spool/outbox/apns.jsonl") + dir.jsonLines("spool/outbox/fcm.jsonl")
        var got: [String: [String]] = [:]
        for line in lines { got[line["device"] as? String ?? "", default: []].append(Self.text(ofPayload: line["payload"]) ?? "?") }
        #expect(got.count == expected.count)
        #expect(got.values.allSatisfy { $0.count == 1 })
        let wrong = expected.filter { got[$0.key] != [$0.value] }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        // A localized title replaces the job's (German has one; the job itself has none).
        let german = try #require(lines.first { $0["device"] as? String == "d6" })
        #expect(((german["payload"] as? [String: Any])?["aps"] as? [String: Any])?["alert"] as? [String: String]
                == ["title": "Neu", "body": "From bob: hallo"])
        let summary = dir.jsonLines("spool/results/loc.jsonl").last ?? [:]
        #expect(summary["delivered"] as? Int == expected.count)
    }

    @Test func hubRouteSendsOneNarrowedRequestPerTextAndReachesEachInstallationOnce() throws {
        let b = try AzureHubIntegrationTests.Bench()
        let expected = Self.devices(b.dir)
        var r = try b.run(["import", b.dir.path("devices.jsonl")])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(AzureHubInstallationTests.waitForInstallations(b, expected.count + 1).count == expected.count + 1)
        b.drop("loc", Self.job)
        r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")

        let sends = AzureHubInstallationTests.sends(b)
        #expect(sends.count == 2 * 5)   // two platforms × (four languages + the default)
        let tags = Set(sends.compactMap { $0["tags"] as? String })
        #expect(tags == [
            "campaign:spring && lang:de", "campaign:spring && lang:es", "campaign:spring && lang:fr",
            "campaign:spring && lang:pt-BR", "campaign:spring && !lang:de && !lang:es && !lang:fr && !lang:pt-BR",
        ])
        var got: [String: [String]] = [:]
        for send in sends {
            let body = (try? JSONSerialization.jsonObject(with: Data((send["body"] as? String ?? "").utf8)))
            let text = Self.text(ofPayload: body) ?? "?"
            for id in send["reached"] as? [String] ?? [] { got[id, default: []].append(text) }
        }
        #expect(got.count == expected.count)
        #expect(got.values.allSatisfy { $0.count == 1 })
        let wrong = expected.filter { got[$0.key] != [$0.value] }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        #expect(b.deliveries("loc").count == 10)
    }

    @Test func aLocalizedHubSendBeyondTheHubsTagLimitIsRefusedWithTheReason() throws {
        let b = try AzureHubIntegrationTests.Bench()
        // 6 languages: the default text's expression would name 1 + 6 tags with && and !.
        let many = ["fr", "es", "de", "it", "nl", "pl"].map { #""\#($0)": {"message": "x"}"# }.joined(separator: ", ")
        b.drop("toomany", #"{"to_tag": "username:alice", "pns": "fcm", "message": "hi", "localized": {\#(many)}}"#)
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        let error = b.summary("toomany")["error"] as? String ?? ""
        #expect(error.contains("7 tags"), "\(error)")
        #expect(error.contains("narrowed by language"), "\(error)")
        #expect(b.requests.isEmpty)
    }
}
