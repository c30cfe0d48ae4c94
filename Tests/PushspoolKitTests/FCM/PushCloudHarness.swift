import Foundation
import Testing

/// A temporary pushspool setup wired to local fakes: `pushspool.json` with the fakes' endpoints,
/// a copy of the service account whose `token_uri` points at the fake, `tls.ca_file` = the test CA,
/// and `allowed_hosts` = ["127.0.0.1"] (the fakes' host). Runs the real binary.
final class PushCloudHarness: SpoolHarness {
    let dir = TempDir("pushspool-oauth")
    var fcm: FakeServer?
    var wns: FakeServer?
    var apns: FakeServer?
    var hms: FakeServer?
    var adm: FakeServer?
    static let clientID = "ms-app://s-1-15-2-test"
    static let clientSecret = "t0p&secret=value"

    init(fcmArgs: [String: String]? = nil, wnsArgs: [String: String]? = nil, apnsArgs: [String: String]? = nil,
         hmsArgs: [String: String]? = nil, admArgs: [String: String]? = nil, concurrency: Int = 256,
         retry: String = #"{"max_attempts": 4, "base_delay_ms": 10, "max_delay_ms": 2000}"#, extraConfig: String = "") throws {
        var providers: [String] = []
        if let fcmArgs {
            let f = try FakeServer("fcm", args: fcmArgs, dir: dir)
            let account = try String(contentsOf: Paths.fixture("service-account.json"), encoding: .utf8)
            dir.write("service-account.json", account.replacingOccurrences(of: "PORT", with: String(f.port)))
            providers.append(#""fcm": {"service_account_file": "service-account.json", "endpoint": "\#(f.url)", "iid_endpoint": "\#(f.url)"}"#)
            fcm = f
        }
        if var wnsArgs {
            wnsArgs["client-id"] = Self.clientID
            wnsArgs["client-secret"] = Self.clientSecret
            let w = try FakeServer("wns", args: wnsArgs, dir: dir)
            // With a tenant the fake is Microsoft Entra's token endpoint (Windows App SDK apps).
            let auth = wnsArgs["tenant"].map { #""auth": "entra", "tenant_id": "\#($0)", "# } ?? ""
            let tokenPath = wnsArgs["tenant"].map { "/\($0)/oauth2/v2.0/token" } ?? "/token"
            providers.append(#""wns": {\#(auth)"client_id": "\#(Self.clientID)", "client_secret": "env:TEST_WNS_SECRET", "#
                + #""token_endpoint": "\#(w.url)\#(tokenPath)", "allowed_hosts": ["127.0.0.1"]}"#)
            wns = w
        }
        if let apnsArgs {
            let a = try FakeServer("apns", args: apnsArgs, dir: dir)
            providers.append(#""apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "\#(Paths.fixture("AuthKey_TESTKEY123.p8").path)", "#
                + #""topic": "com.example.app", "environment": "sandbox", "endpoint": "\#(a.url)"}"#)
            apns = a
        }
        if let hmsArgs {
            let f = try FakeServer("hms", args: hmsArgs, dir: dir)
            providers.append(#""hms": {"app_id": "104000001", "client_id": "104000001", "client_secret": "env:TEST_HMS_SECRET", "#
                + #""endpoint": "\#(f.url)", "token_endpoint": "\#(f.url)/oauth2/v3/token"}"#)
            hms = f
        }
        if let admArgs {
            let f = try FakeServer("adm", args: admArgs, dir: dir)
            providers.append(#""adm": {"client_id": "amzn1.application-oa2-client.test", "client_secret": "env:TEST_ADM_SECRET", "#
                + #""endpoint": "\#(f.url)", "token_endpoint": "\#(f.url)/auth/o2/token"}"#)
            adm = f
        }
        dir.write("pushspool.json", """
            {"spool": "spool", "concurrency": \(concurrency), "retry": \(retry),
             "providers": {\(providers.joined(separator: ", "))},
             "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}\(extraConfig)}
            """)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
    }

    var configPath: String { dir.path("pushspool.json") }

    /// The environment the config's `env:` secrets are read from.
    static let environment = ["TEST_WNS_SECRET": clientSecret, "TEST_HMS_SECRET": "hms-secret", "TEST_ADM_SECRET": "adm-secret"]

    @discardableResult
    func cli(_ args: [String]) throws -> RunResult {
        try runPushspool(args + ["--config", configPath], cwd: dir.url, env: Self.environment)
    }

    /// Registers devices in one `import` (one process however many devices).
    func register(_ devices: [(id: String, platform: String, handle: String)], tag: String = "username:alice") throws {
        let lines = devices.map { d in
            #"{"id": "\#(d.id)", "platform": "\#(d.platform)", "handle": "\#(d.handle)", "tags": ["\#(tag)"]}"#
        }
        dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        let r = try cli(["import", dir.path("devices.jsonl")])
        #expect(r.status == 0, "import failed: \(r.stderr)")
    }

    /// `drop` (kept under the name the tests use; it cannot fail short of a broken temp folder).
    func submit(_ id: String, _ json: String) throws { drop(id, json) }

    func runOnce() throws -> RunResult { try cli(["run", "--once"]) }

    /// Drops the job, runs the dispatcher once (which must succeed) and returns the job's deliveries.
    @discardableResult
    func runOnce(_ id: String, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: [String: Any]] {
        try submit(id, json)
        let run = try runOnce()
        #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
        return deliveries(id)
    }

    /// Ids of the devices still registered.
    func registeredIDs() throws -> Set<String> { Self.deviceIDs(listed: try cli(["devices"]).stdout) }

    /// Everything pushspool wrote that a user or log collector could read.
    func visibleText(_ runs: [RunResult]) -> String {
        let logs = dir.list("spool/results").map { dir.read("spool/results/\($0)") ?? "" }
        return (logs + runs.flatMap { [$0.stdout, $0.stderr] }).joined(separator: "\n")
    }
}

extension Dictionary where Key == String, Value == Any {
    func int(_ k: String) -> Int? { (self[k] as? NSNumber)?.intValue }
    func str(_ k: String) -> String? { self[k] as? String }
    func dict(_ k: String) -> [String: Any]? { self[k] as? [String: Any] }
    func list(_ k: String) -> [Any]? { self[k] as? [Any] }
}
