import Foundation
@testable import PushspoolKit

/// A spool, a config routing apns to a fresh fake APNs, and the real `pushspool` binary.
final class APNsSpool: SpoolHarness {
    let dir = TempDir("pushspool-apns")
    let fake: FakeServer
    var spool: String { dir.path("spool") }
    var configPath: String { dir.path("pushspool.json") }
    var common: [String] { ["--spool", spool, "--config", configPath] }

    init(fakeArgs: [String: String] = [:], concurrency: Int = 64, maxAttempts: Int = 3, maxDelayMs: Int = 20,
         apns: String? = nil, apnsExtra: String = "", extraConfig: String = "") throws {
        fake = try FakeServer("apns", args: fakeArgs, dir: dir)
        // The key is a credential: 0600, as pushspool asks of it.
        dir.write("AuthKey_TESTKEY123.p8", try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8), mode: 0o600)
        let section = apns ?? """
            {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
             "topic": "com.example.app", "environment": "production", "endpoint": "\(fake.url)"\(apnsExtra)}
            """
        dir.write("pushspool.json", """
            {"spool": "spool", "concurrency": \(concurrency),
             "retry": {"max_attempts": \(maxAttempts), "base_delay_ms": 1, "max_delay_ms": \(maxDelayMs)},
             "routes": {"apns": "apns"},
             "providers": {"apns": \(section)},
             "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}\(extraConfig)}
            """)
        try initSpool(common)
    }

    static func token(_ prefix: String, _ n: Int) -> String { prefix + String(format: "%060x", n) }

    @discardableResult
    func cli(_ args: [String]) throws -> RunResult { try runPushspool(args) }

    /// `tokenKind`: `--token-kind` (nil: none given, a device token).
    func register(id: String, handle: String, tag: String = "username:alice", tokenKind: String? = nil) throws {
        let kind = tokenKind.map { ["--token-kind", $0] } ?? []
        let r = try cli(["register"] + common + ["--platform", "apns", "--handle", handle, "--tag", tag, "--id", id] + kind)
        guard r.status == 0 else { throw FakeServer.FakeError(message: "register failed: \(r.stderr)") }
    }

    /// Imports `count` devices `d<i>` with tokens `%064x` of i, tagged `tag`.
    func importDevices(_ count: Int, tag: String) throws {
        var lines = ""
        for i in 0..<count {
            lines += #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["\#(tag)"]}"# + "\n"
        }
        dir.write("devices.jsonl", lines)
        let r = try cli(["import"] + common + [dir.path("devices.jsonl")])
        guard r.status == 0 else { throw FakeServer.FakeError(message: "import failed: \(r.stderr)") }
    }

    func runOnce() throws -> RunResult { try cli(["run", "--once"] + common) }

    func deviceCount() throws -> Int? {
        Int(try cli(["devices", "--count"] + common).stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func deviceIDs() throws -> Set<String> { Self.deviceIDs(listed: try cli(["devices"] + common).stdout) }
}
