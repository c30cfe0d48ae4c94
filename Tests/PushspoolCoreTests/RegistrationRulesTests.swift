import Testing
import PushspoolCore

/// The one set of registration rules, as tables: each bad field → its field and message, and the
/// same verdict through every entry point in Core (register jobs, unregister jobs).
@Suite struct RegistrationRulesTests {
    static let apnsToken = String(repeating: "ab", count: 32)

    /// Device ids: nil = valid.
    static let ids: [(String, String, String?)] = [
        ("plain", "alice-iphone", nil),
        ("spaces are printable", "my phone", nil),
        ("case is kept", "Alice-iPhone", nil),
        ("unicode", "téléphone-d'Alice", nil),
        ("emoji", "📱", nil),
        ("128 bytes", String(repeating: "a", count: 128), nil),
        ("129 bytes", String(repeating: "a", count: 129), "longer than 128 bytes"),
        ("64 two-byte characters", String(repeating: "é", count: 64), nil),
        ("65 two-byte characters", String(repeating: "é", count: 65), "longer than 128 bytes"),
        ("empty", "", "must not be empty"),
        ("slash", "a/b", #"must not contain "/" (ids appear in URL paths)"#),
        ("dot", ".", #"must not be "." or "..""#),
        ("dot dot", "..", #"must not be "." or "..""#),
        ("three dots are a name", "...", nil),
        ("newline", "a\nb", "contains a control character"),
        ("tab", "a\tb", "contains a control character"),
        ("DEL", "a\u{7F}", "contains a control character"),
        ("C1 control", "a\u{85}b", "contains a control character"),
        ("right-to-left override", "abc\u{202E}gpj.exe", "contains a bidirectional control character (U+202E)"),
        ("left-to-right embedding", "\u{202A}x", "contains a bidirectional control character (U+202A)"),
        ("isolate", "x\u{2066}y", "contains a bidirectional control character (U+2066)"),
        ("pop isolate", "x\u{2069}", "contains a bidirectional control character (U+2069)"),
        ("left-to-right mark", "x\u{200E}", "contains a bidirectional control character (U+200E)"),
        ("right-to-left mark", "x\u{200F}", "contains a bidirectional control character (U+200F)"),
        ("arabic letter mark", "x\u{061C}", "contains a bidirectional control character (U+061C)"),
        ("line separator", "a\u{2028}b", "contains a line or paragraph separator"),
        ("unassigned", "a\u{0378}", "contains an unassigned character (U+0378)"),
        // Invisible: alice\u{200B}phone and alicephone would look like one device.
        ("zero width space", "alice\u{200B}phone", "contains an invisible format character (U+200B)"),
        ("byte order mark", "\u{FEFF}alice", "contains an invisible format character (U+FEFF)"),
        ("zero width joiner", "a\u{200D}b", "contains an invisible format character (U+200D)"),
        ("soft hyphen", "a\u{AD}b", "contains an invisible format character (U+00AD)"),
        ("word joiner", "a\u{2060}b", "contains an invisible format character (U+2060)"),
        ("no-break space", "my\u{A0}phone", "contains a space other than U+0020 (U+00A0)"),
        ("ideographic space", "my\u{3000}phone", "contains a space other than U+0020 (U+3000)"),
        ("en quad", "a\u{2000}b", "contains a space other than U+0020 (U+2000)"),
    ]

    @Test(arguments: ids.indices) func deviceIDs(index: Int) {
        let (name, id, expected) = Self.ids[index]
        #expect(Identifier.deviceIDProblem(id) == expected, "\(name)")
        // The import's byte-level check agrees wherever it answers (plain ASCII).
        if id.utf8.allSatisfy({ $0 < 0x80 }) {
            #expect(Identifier.isValidASCIIDeviceID(Array(id.utf8)) == (expected == nil), "\(name)")
        }
    }

    @Test func idsAreStoredInNFC() throws {
        let decomposed = "cafe\u{301}"
        #expect(Identifier.deviceIDProblem(decomposed) == nil)
        let r = try RegistrationRules.registration(id: .string(decomposed), platform: "fcm", handle: "t", tags: nil, lang: nil).get()
        #expect(Array(r.id!.unicodeScalars) == Array("caf\u{E9}".unicodeScalars))
        #expect(Identifier.canonical(decomposed).utf8.count == 5)
    }

    /// Whole registrations → every problem with its field.
    static let bad: [(String, JSONValue?, JSONValue?, JSONValue?, JSONValue?, JSONValue?, [String])] = [
        ("nothing", nil, nil, nil, nil, nil,
         ["platform: required (one of apns, fcm, gcm, wns, web, hms, adm)", "handle: required (the device token or channel URI)"]),
        ("id not a string", 7, "fcm", "t", nil, nil, ["id: must be a string, got number"]),
        ("id with a slash", "a/b", "fcm", "t", nil, nil, [#"id: must not contain "/" (ids appear in URL paths)"#]),
        ("id ..", "..", "fcm", "t", nil, nil, [#"id: must not be "." or "..""#]),
        ("id bidi", "a\u{202E}b", "fcm", "t", nil, nil, ["id: contains a bidirectional control character (U+202E)"]),
        ("unknown platform", nil, "ios", "t", nil, nil, [#"platform: unknown platform "ios" (expected apns, fcm, gcm, wns, web, hms, adm)"#]),
        ("platform empty", nil, "", "t", nil, nil, ["platform: must be a non-empty string"]),
        ("handle empty", nil, "fcm", "", nil, nil, ["handle: must not be empty"]),
        ("handle with a space", nil, "fcm", "a b", nil, nil, ["handle: must not contain spaces or control characters"]),
        ("handle not a string", nil, "fcm", 5, nil, nil, ["handle: must be a string, got number"]),
        ("short APNs token", nil, "apns", "abc", nil, nil, ["handle: an APNs device token must be an even number (64 or more) of hex digits"]),
        ("WNS handle not https", nil, "wns", "http://x.notify.windows.com/", nil, nil,
         ["handle: a WNS channel URI must be an absolute https URL, e.g. https://….notify.windows.com/?token=…"]),
        ("web handle not a subscription", nil, "web", .object([("endpoint", 1)]), nil, nil, ["handle.endpoint: must be a string, got number"]),
        ("tags not an array", nil, "fcm", "t", "a", nil, ["tags: must be an array of tags, got string"]),
        ("tag not a string", nil, "fcm", "t", .array(["a", 3]), nil, ["tags[1]: must be a tag string, got number"]),
        ("bad tag", nil, "fcm", "t", .array(["ok", "no way"]), nil, [#"tags[1]: invalid tag "no way" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"#]),
        ("61 tags: more than the hub keeps", nil, "fcm", "t", .array((0...60).map { .string("t\($0)") }), nil,
         ["tags: at most 60 tags a device (what the notification hub keeps), got 61"]),
        ("bad lang", nil, "fcm", "t", nil, "english!", [#"lang: "english!" is not a BCP 47 language tag such as fr, pt-BR or zh-Hant"#]),
        ("several at once", "a/b", "apns", "abc", .array([""]), "x_y",
         [#"id: must not contain "/" (ids appear in URL paths)"#,
          "handle: an APNs device token must be an even number (64 or more) of hex digits",
          #"tags[0]: invalid tag "" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"#,
          #"lang: "x_y" is not a BCP 47 language tag such as fr, pt-BR or zh-Hant"#]),
    ]

    @Test(arguments: bad.indices) func refusesWithTheField(index: Int) {
        let (name, id, platform, handle, tags, lang, expected) = Self.bad[index]
        let result = RegistrationRules.registration(id: id, platform: platform, handle: handle, tags: tags, lang: lang)
        guard case .failure(let refused) = result else {
            Issue.record("\(name): accepted")
            return
        }
        #expect(refused.problems.map(\.description) == expected, "\(name)")
    }

    @Test func acceptsAndCanonicalises() throws {
        let r = try RegistrationRules.registration(id: "my phone", platform: "gcm", handle: "tok:1", tags: .array(["b", "a", "b"]),
                                                   lang: "pt-br").get()
        #expect(r == Registration(id: "my phone", platform: .fcm, handle: "tok:1", tags: ["b", "a"], lang: LanguageTag("pt-BR")))
        let apns = try RegistrationRules.registration(id: nil, platform: "apns", handle: .string(Self.apnsToken), tags: nil, lang: nil).get()
        #expect(apns.id == nil && apns.tags.isEmpty && apns.lang == nil)
    }

    @Test func tutorialFieldNames() {
        let result = RegistrationRules.registration(id: nil, platform: "mpns", handle: nil, tags: "x", lang: nil, names: .tutorial)
        guard case .failure(let refused) = result else { Issue.record("accepted"); return }
        #expect(refused.problems.map(\.field) == ["Platform", "Handle", "Tags"])
    }

    @Test func unregistrations() throws {
        #expect(try RegistrationRules.unregistration(id: "my phone", handle: nil).get() == .id("my phone"))
        #expect(try RegistrationRules.unregistration(id: nil, handle: "tok").get() == .handle("tok"))
        let both = RegistrationRules.unregistration(id: "a", handle: "b")
        guard case .failure(let p) = both else { Issue.record("accepted"); return }
        #expect(p.description == "handle: not allowed together with id (give exactly one of id, handle)")
        guard case .failure(let slash) = RegistrationRules.unregistration(id: "a/b", handle: nil) else { Issue.record("accepted"); return }
        #expect(slash.description == #"id: must not contain "/" (ids appear in URL paths)"#)
    }

    /// "my phone" and "a/b" get the same verdict from register and unregister jobs.
    @Test func jobsAgree() {
        #expect(parseJob(#"{"kind":"register","id":"my phone","platform":"fcm","handle":"t"}"#).problems == [])
        #expect(parseJob(#"{"kind":"unregister","id":"my phone"}"#).problems == [])
        #expect(parseJob(#"{"kind":"register","id":"a/b","platform":"fcm","handle":"t"}"#).problems
                == [#"id: must not contain "/" (ids appear in URL paths)"#])
        #expect(parseJob(#"{"kind":"unregister","id":"a/b"}"#).problems == [#"id: must not contain "/" (ids appear in URL paths)"#])
        #expect(parseJob(#"{"kind":"unregister","id":"\u202e"}"#).problems == ["id: contains a bidirectional control character (U+202E)"])
    }

    /// Job ids name files: spellings that differ only by case are one id, device ids keep case.
    @Test func jobIDsFoldCase() {
        #expect(Identifier.jobKey("Case1") == "case1")
        #expect(Identifier.jobKey("CASE-1_x.Y") == "case-1_x.y")
        #expect(Identifier.jobKey("already-lower") == "already-lower")
        #expect(Identifier.canonical("Alice-iPhone") == "Alice-iPhone")
        #expect(Identifier.jobIDProblem("ok.1") == nil)
        #expect(Identifier.jobIDProblem("my job") == #"must match [A-Za-z0-9._-]{1,128}, got "my job""#)
        #expect(Identifier.jobIDProblem("\u{1B}[2J") == #"must match [A-Za-z0-9._-]{1,128}, got "\u{1B}[2J""#)
    }

    /// Job ids keep their narrower rule, inside the shared one.
    @Test func jobIDsStayInsideTheIdentifierRule() {
        for id in [".", "..", "", String(repeating: "a", count: 129), "a/b", "my job"] { #expect(!Identifier.isValidJobID(id), "\(id)") }
        for id in ["...", "a.b", String(repeating: "a", count: 128)] { #expect(Identifier.isValidJobID(id), "\(id)") }
    }
}

/// One device, one handle, however an app prints its token.
@Suite struct HandleCanonicalFormTests {
    @Test func apnsTokensAreStoredLowercase() throws {
        let upper = String(repeating: "AB", count: 32)
        #expect(Platform.apns.canonicalHandle(upper) == upper.lowercased())
        let r = try RegistrationRules.registration(id: nil, platform: "apns", handle: .string(upper), tags: nil, lang: nil).get()
        #expect(r.handle == upper.lowercased())
        #expect(Platform.canonicalLookupHandle(upper) == upper.lowercased())
        // Other platforms' handles keep their case (FCM tokens and WNS URIs are case-sensitive).
        #expect(Platform.fcm.canonicalHandle("AbC:dEf") == "AbC:dEf")
        #expect(Platform.canonicalLookupHandle("AbC:dEf") == "AbC:dEf")
    }
}
