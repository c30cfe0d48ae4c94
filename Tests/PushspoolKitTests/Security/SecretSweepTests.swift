import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit
@testable import PushspoolServer
#if canImport(Glibc)
import Glibc
#endif

/// Issue 27 §1: one distinct secret planted in every place a secret can live (the PostgreSQL
/// password in the URI and through `env:`, the WNS client secret, the hub connection string's
/// key, the FCM service account's private key, the APNs and VAPID key files), then every command
/// of `SecretSweep.commands` run in every scenario (everything up, providers down, PostgreSQL
/// down, bad credentials), collecting stdout, stderr, every file under the spool but `.state/`,
/// and the metrics file: no planted secret may appear anywhere.
///
/// A new command is covered by adding one line to `SecretSweep.commands`.
enum SecretSweep {
    /// Every command, in an order that gives each something to work on. `{spool}` and `{dir}` are
    /// replaced by the scenario's spool and the test folder.
    static let commands: [(name: String, args: [String])] = [
        ("init", ["init"]),
        ("init (again)", ["init"]),
        ("registry migrate", ["registry", "migrate"]),
        ("registry backup", ["registry", "backup", "{dir}/registry-backup.sqlite"]),
        ("config --check", ["config", "--check"]),
        ("import", ["import", "{dir}/devices.jsonl"]),
        ("register", ["register", "--platform", "fcm", "--handle", "ok-2", "--tag", "username:alice", "--id", "i-fcm2"]),
        ("devices", ["devices"]),
        ("devices --count", ["devices", "--count"]),
        ("validate --resolve", ["validate", "--resolve", "{dir}/job.json"]),
        ("submit", ["submit", "--to-tag", "username:alice", "--pns", "apns,fcm,wns", "--message", "hi", "--id", "now"]),
        ("submit (later)", ["submit", "--to-tag", "username:alice", "--pns", "apns", "--message", "m", "--id", "later",
                            "--not-before", "2099-01-01T00:00:00Z"]),
        ("pause", ["pause", "later"]),
        ("status", ["status"]),
        ("status --json", ["status", "--json"]),
        ("resume", ["resume", "later"]),
        ("run --once (json, debug)", ["run", "--once", "--log-format", "json", "--log-level", "debug"]),
        ("submit (again)", ["submit", "--to-tag", "username:alice", "--pns", "fcm,wns", "--message", "again", "--id", "again"]),
        ("run --once (logfmt, debug)", ["run", "--once", "--log-format", "logfmt", "--log-level", "debug"]),
        ("submit (third)", ["submit", "--to-tag", "username:alice", "--pns", "apns,wns", "--message", "3", "--id", "third"]),
        ("run --once (text, debug)", ["run", "--once", "--log-format", "text", "--log-level", "debug"]),
        ("cancel", ["cancel", "later"]),
        ("hub sync", ["hub", "sync"]),
        ("unregister", ["unregister", "--id", "i-fcm2"]),
        ("status (after)", ["status", "--json"]),
        // Started, then stopped with SIGTERM after `serveFor` seconds: startup and shutdown output.
        ("serve", ["serve"]),
    ]

    /// How long `serve` runs before its SIGTERM.
    static let serveFor = 2.0
}

@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct SecretSweepTests {
    static let pgURIPassword = "PgUriPw-5f1c9e"
    static let pgEnvPassword = "PgEnvPw-a07d42"
    static let pgDownPassword = "PgDownPw-3b8e61"
    static let pgBadPassword = "PgBadPw-c94f07"
    static let hubKey = "HubSasKey-7d2a0b4c9e="

    /// A TCP port on 127.0.0.1 nobody listens on (bound, then closed).
    static func closedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    @Test func noPlantedSecretAppearsAnywhere() throws {
        let cluster = try PostgresCluster.shared.get()
        let h = try PushCloudHarness(fcmArgs: [:], wnsArgs: [:], apnsArgs: [:])
        let dir = h.dir
        FrontDoorFiles.write(into: dir)
        let keygen = try runPushspool(["webpush", "keygen", "--out", dir.path("vapid.pem")], cwd: dir.url)
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let wns = try #require(h.wns)
        dir.write("devices.jsonl", [
            #"{"id": "i-apns", "platform": "apns", "handle": "\#(String(repeating: "ab", count: 32))", "tags": ["username:alice"]}"#,
            #"{"id": "i-fcm", "platform": "gcm", "handle": "ok-1", "tags": ["username:alice"]}"#,
            #"{"id": "i-wns", "platform": "wns", "handle": "\#(wns.url)/ch/ok-1?token=x", "tags": ["username:alice"]}"#,
        ].joined(separator: "\n") + "\n")
        dir.write("job.json", #"{"to_tag": "username:alice", "pns": ["apns", "gcm", "wns"], "message": "dry"}"#)
        let base = try #require(try JSONSerialization.jsonObject(with: Data((dir.read("pushspool.json") ?? "").utf8)) as? [String: Any])
        let hubPort = Self.closedPort()

        // The PostgreSQL URIs: the cluster listens on a Unix socket only.
        let socketQuery = "host=\(cluster.dir.path)&port=\(cluster.port)"
        let uriDB = try cluster.createDatabase("sweepuri")
        let envDB = try cluster.createDatabase("sweepenv")
        let downDB = try cluster.createDatabase("sweepdown")
        func database(_ uri: String) -> String { String(uri.split(separator: "?")[0].split(separator: "/").last!) }
        let scenarios: [(name: String, registry: String, env: [String: String], stopProviders: Bool)] = [
            ("password in the URI", "postgresql://postgres:\(Self.pgURIPassword)@/\(database(uriDB))?\(socketQuery)", [:], false),
            ("password through env:", "env:PUSHSPOOL_DB",
             ["PUSHSPOOL_DB": "postgresql:///\(database(envDB))?\(socketQuery)&user=postgres&password=\(Self.pgEnvPassword)"], false),
            ("providers down", "env:PUSHSPOOL_DB",
             ["PUSHSPOOL_DB": "postgresql:///\(database(downDB))?\(socketQuery)&user=postgres&password=\(Self.pgEnvPassword)"], true),
            ("PostgreSQL down", "postgresql://pushspool:\(Self.pgDownPassword)@127.0.0.1:\(Self.closedPort())/push", [:], true),
            ("bad credentials", "postgresql://nosuchrole:\(Self.pgBadPassword)@/\(database(uriDB))?\(socketQuery)", [:], true),
        ]

        var outputs: [(String, String)] = []
        var exits: [String: Int32] = [:]
        for (n, scenario) in scenarios.enumerated() {
            if scenario.stopProviders { h.fcm?.stop(); h.wns?.stop(); h.apns?.stop() }
            let spool = "spool-\(n)"
            var config = base
            config["spool"] = spool
            config["registry"] = scenario.registry
            config["metrics"] = ["textfile": "\(spool)-metrics.prom", "interval_seconds": 1]
            var providers = config["providers"] as? [String: Any] ?? [:]
            providers["azure"] = ["connection_string": "env:SWEEP_HUB",
                                  "hub": "myhub"]
            providers["webpush"] = ["vapid_private_key_file": "vapid.pem", "subject": "mailto:ops@example.com",
                                    "allowed_hosts": ["127.0.0.1"]]
            config["providers"] = providers
            // With the providers down, APNs goes through the hub (down too): its key signs requests.
            if scenario.stopProviders { config["routes"] = ["apns": "azure", "gcm": "fcm", "wns": "wns"] }
            config["http"] = ["listen": "127.0.0.1:0", "users_file": "users.htpasswd", "tokens_file": "tokens.txt"]
            let data = try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys])
            dir.write("pushspool.json", String(decoding: data, as: UTF8.self))
            let env = scenario.env.merging([
                "TEST_WNS_SECRET": PushCloudHarness.clientSecret,
                "SWEEP_HUB": "Endpoint=sb://127.0.0.1:\(hubPort)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(Self.hubKey)",
            ]) { $1 }
            for command in SecretSweep.commands {
                let args = command.args.map { $0.replacingOccurrences(of: "{dir}", with: dir.url.path) }
                let r = try runPushspool(args + ["--config", dir.path("pushspool.json")], cwd: dir.url, env: env,
                                         timeout: args.first == "serve" ? SecretSweep.serveFor : 60)
                let label = "\(scenario.name) / \(command.name)"
                outputs.append(("\(label) stdout", r.stdout))
                outputs.append(("\(label) stderr", r.stderr))
                exits[label] = r.status
            }
            let root = dir.url.appendingPathComponent(spool)
            let files = (FileManager.default.enumerator(atPath: root.path)?.allObjects as? [String]) ?? []
            #expect(!files.isEmpty, "\(scenario.name): the spool \(spool) exists")
            for path in files where !path.hasPrefix(".state") {
                var isDir: ObjCBool = false
                let full = root.appendingPathComponent(path).path
                if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue {
                    outputs.append(("\(scenario.name) / \(spool)/\(path)", String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: full))) ?? Data(), as: UTF8.self)))
                }
            }
            if let metrics = dir.read("\(spool)-metrics.prom") { outputs.append(("\(scenario.name) / metrics file", metrics)) }
        }

        if let dump = ProcessInfo.processInfo.environment["PUSHSPOOL_SWEEP_DUMP"] {
            try? Data(outputs.map { "=== \($0.0) (exit \(exits[$0.0.components(separatedBy: " std")[0]].map(String.init) ?? "-"))\n\($0.1)\n" }
                .joined().utf8).write(to: URL(fileURLWithPath: dump))
        }
        // The sweep reached what it claims to: successes and each kind of failure.
        #expect(exits["password in the URI / run --once (json, debug)"] == 0)
        #expect(exits["password through env: / status --json"] == 0)
        #expect(exits["PostgreSQL down / devices"] != 0)
        #expect(exits["bad credentials / devices"] != 0)
        #expect(outputs.contains { $0.0.hasSuffix("metrics file") })
        let served = outputs.first { $0.0 == "password in the URI / serve stderr" }?.1 ?? ""
        #expect(served.contains("serving http://127.0.0.1:"), "\(served)")
        #expect(outputs.contains { $0.0.contains("/results/") })
        #expect(outputs.contains { $0.0.hasPrefix("providers down / ") && $0.0.contains("/results/") && $0.1.contains("Connection refused") })
        #expect(outputs.contains { $0.0 == "providers down / hub sync stderr" && $0.1.contains("Connection refused") })
        // PostgreSQL is shown as a URI with its password masked, never as a path.
        let initOut = outputs.first { $0.0 == "password in the URI / init stdout" }?.1 ?? ""
        #expect(initOut.contains("registry          postgresql://postgres:***@/"), "\(initOut)")
        let downInit = outputs.first { $0.0 == "PostgreSQL down / init stderr" }?.1 ?? ""
        #expect(downInit.contains("postgresql://pushspool:***@127.0.0.1:"), "\(downInit)")

        func pemLines(_ pem: String) -> [String] {
            pem.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count >= 16 }
        }
        let account = try JSONSerialization.jsonObject(with: Data(contentsOf: Paths.fixture("service-account.json"))) as? [String: Any]
        var secrets = [Self.pgURIPassword, Self.pgEnvPassword, Self.pgDownPassword, Self.pgBadPassword, Self.hubKey,
                       PushCloudHarness.clientSecret]
        secrets += pemLines(try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8))
        secrets += pemLines(account?["private_key"] as? String ?? "")
        secrets += pemLines(dir.read("vapid.pem") ?? "")
        #expect(secrets.count > 12)
        for (name, text) in outputs {
            for secret in secrets { #expect(!text.contains(secret), "\(name) holds a planted secret (\(secret.prefix(8))…):\n\(text.prefix(2000))") }
        }
    }
}
