import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit
import PushspoolTestSupport

/// One registration, one verdict, whichever way it enters: an import line (fast and general
/// paths, bulk load and line by line, both backends), a register or unregister job, the CLI.
@Suite struct RegistrationPathTests {
    /// Installation ids → nil when valid, else the import's message for the line.
    static let ids: [(String, String?)] = [
        ("my phone", nil),
        ("Alice-iPhone", nil),
        ("...", nil),
        (String(repeating: "x", count: 128), nil),
        ("a/b", #"id: must not contain "/" (ids appear in URL paths)"#),
        ("..", #"id: must not be "." or "..""#),
        (".", #"id: must not be "." or "..""#),
        (String(repeating: "x", count: 129), "id: longer than 128 bytes"),
        ("x\u{7F}", "id: contains a control character"),
        ("x\u{202E}y", "id: contains a bidirectional control character (U+202E)"),
    ]

    static func line(_ id: String, handle: String) -> String {
        #"{"id":\#(JSONValue.string(id).encodedString),"platform":"fcm","handle":"\#(handle)","tags":["t","t"]}"#
    }

    /// The fast decoder accepts only what the general one accepts, and decodes it the same.
    @Test(arguments: ids.indices) func fastPathAgreesWithTheGeneralOne(index: Int) throws {
        let (id, problem) = Self.ids[index]
        let bytes = Array(Self.line(id, handle: "h").utf8)
        var fast = RegistrationLine()
        let general = Result { () throws(RegistryError) -> Registration in try RegistrationFile.registration(fromJSONLine: bytes) }
        switch general {
        case .success(let r):
            #expect(problem == nil)
            if let quick = fast.decode(bytes) { #expect(Set(quick.tags) == Set(r.tags) && quick.id == r.id && quick.handle == r.handle) }
        case .failure(let error):
            #expect(error.message == problem)
            #expect(fast.decode(bytes) == nil)
        }
    }

    /// Into an empty registry (bulk load) and into a non-empty one (line by line), on both backends.
    @Test(arguments: RegistryBackend.allCases, [true, false]) func importRefusesTheSameIDs(backend: RegistryBackend, empty: Bool) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        if !empty { try registry.upsert(RegistryFixture.reg("before", .fcm, "h-before")) }
        let text = Self.ids.enumerated().map { Self.line($0.element.0, handle: "h\($0.offset)") }.joined(separator: "\n") + "\n"
        dir.write("devices.jsonl", text)
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"))
        let expected = Self.ids.enumerated().compactMap { i, entry in entry.1.map { "line \(i + 1): \($0)" } }
        #expect(report.refused == expected)
        #expect(report.imported == Self.ids.filter { $0.1 == nil }.count)
        #expect(try registry.device(id: "my phone")?.tags == ["t"])
    }

    /// "my phone" registered by a job is unregistered by a job; "a/b" is refused by both.
    @Test func jobsAgree() throws {
        let h = try EngineHarness()
        try h.drop("reg.json", #"{"kind":"register","id":"my phone","platform":"gcm","handle":"tok-1","tags":["u"]}"#)
        try h.drop("bad.json", #"{"kind":"unregister","id":"a/b"}"#)
        h.runOnce(ScriptedProvider())
        #expect(try h.registry.device(id: "my phone") != nil)
        #expect(h.summary("bad")?.error == #"id: must not contain "/" (ids appear in URL paths)"#)
        try h.drop("unreg.json", #"{"kind":"unregister","id":"my phone"}"#)
        h.runOnce(ScriptedProvider())
        #expect(try h.registry.device(id: "my phone") == nil)
        #expect(h.list(.done).sorted() == ["reg.json", "unreg.json"])
    }

    @Test func cliAgrees() throws {
        let dir = TempDir("pushspool-registration")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        let ok = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "u", "--tag", "u", "--id", "my phone"] + spool)
        #expect(ok.status == 0 && ok.stdout == "registered my phone (fcm; tags: u)\n", "\(ok.stderr)")
        let slash = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-2", "--id", "a/b"] + spool)
        #expect(slash.status == 65 && slash.stderr == "pushspool: register: --id: must not contain \"/\" (ids appear in URL paths)\n")
        let tag = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-2", "--tag", "no way"] + spool)
        #expect(tag.status == 65 && tag.stderr.contains(#"--tag: invalid tag "no way""#), "\(tag.stderr)")
        let unregisterSlash = try runPushspool(["unregister", "--id", "a/b"] + spool)
        #expect(unregisterSlash.status == 65 && unregisterSlash.stderr.contains("--id: must not contain"))
        let gone = try runPushspool(["unregister", "--id", "my phone"] + spool)
        #expect(gone.status == 0 && gone.stdout == "unregistered my phone (fcm)\n", "\(gone.stderr)")
    }
}
