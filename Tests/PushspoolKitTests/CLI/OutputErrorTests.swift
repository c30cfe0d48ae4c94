import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolCLI

/// Output that could not be written is a failure: `pushspool: cannot write output: <strerror>`
/// and exit 74 (stdout on a full disk, or closed); a reader that goes away (`devices | head -1`)
/// ends the command quietly, as it ends `ls`.
@Suite(.serialized) struct OutputErrorTests {
    /// One line per command: its arguments (the spool and config are appended) and what runs
    /// before it so that it has something to print. A new command is covered by adding a line.
    static let commands: [(args: [String], before: [[String]])] = [
        (["init"], []),
        (["--help"], []),
        (["--version"], []),
        (["run", "--once"], []),
        (["submit", "--to-tag", "username:alice", "--pns", "apns", "--message", "hi", "--not-before", "2999-01-01T00:00:00Z"], []),
        (["validate", "job.json"], []),
        (["register", "--platform", "fcm", "--handle", "fcm-token-out", "--id", "out-phone"], []),
        (["unregister", "--id", "out-phone"], [["register", "--platform", "fcm", "--handle", "fcm-token-out", "--id", "out-phone"]]),
        (["devices"], []),
        (["devices", "--count"], []),
        (["import", "devices.jsonl"], []),
        (["registry", "migrate"], []),
        (["registry", "backup", "backup-out.sqlite"], []),
        (["completions", "bash"], []),
        (["status"], []),
        (["status", "--json"], []),
        (["pause", "later"], [["submit", "--to-tag", "username:alice", "--pns", "apns", "--message", "hi", "--id", "later",
                               "--not-before", "2999-01-01T00:00:00Z"]]),
        (["resume", "later"], []),
        (["cancel", "later"], []),
        (["config", "--check"], []),
        (["webpush", "keygen", "--out", "vapid-out.pem"], [["rm-vapid"]]),
        (["demo"], []),
    ]

    /// Commands left out above, and why; every command is in one list or the other.
    static let elsewhere: [String: String] = [
        "hub": "needs the fake hub: hubSyncOutput below",
        "apns": "needs Apple's channel API: the fake APNs serves it in APNsTokenKindIntegrationTests",
        "fcm": "needs the fake FCM: FCMTopicSubscriptionTests checks its output",
        "results": "prints a job's result log: its output is checked in SharedQueueTests",
        "serve": "prints nothing on stdout (its log is on stderr); its requests are answered on sockets",
    ]

    @Test("the list covers every command")
    func everyCommandListed() {
        let listed = Set(Self.commands.map { $0.args[0] }).union(Self.elsewhere.keys)
        for name in CLI.commands.keys { #expect(listed.contains(name), "add `\(name)` to OutputErrorTests.commands") }
    }

    /// The binary under `sh` with stdout redirected as `redirect` says (`>/dev/full`, `>&-`).
    static func run(_ args: [String], redirect: String, dir: TempDir) throws -> RunResult {
        try runPushspoolVia("/bin/sh", ["-c", "cd \"$1\" && shift && exec \"$0\" \"$@\" \(redirect)", Paths.binary.path, dir.url.path] + args)
    }

    static func setUp(_ dir: TempDir) throws -> [String] {
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        dir.write("pushspool.json", #"{"spool": "spool"}"#)
        try initSpool(common, cwd: dir.url)
        dir.write("job.json", #"{"id": "v1", "to_tag": "username:alice", "pns": "apns", "message": "hi"}"#)
        dir.write("devices.jsonl", (1...3).map { #"{"id": "imp-\#($0)", "platform": "fcm", "handle": "fcm-imp-\#($0)", "tags": ["username:alice"]}"# }
            .joined(separator: "\n") + "\n")
        _ = try runPushspool(["import", "devices.jsonl"] + common, cwd: dir.url)
        return common
    }

    static func prepare(_ before: [[String]], common: [String], dir: TempDir) throws {
        for step in before {
            if step == ["rm-vapid"] { try? FileManager.default.removeItem(atPath: dir.path("vapid-out.pem")); continue }
            _ = try runPushspool(step + common, cwd: dir.url)
        }
    }

    @Test("stdout on a full disk or closed: every command says so and exits 74",
          arguments: [(">/dev/full", "No space left on device"), (">&-", "Bad file descriptor")])
    func writeErrors(redirect: String, reason: String) throws {
        let dir = TempDir("pushspool-out")
        let common = try Self.setUp(dir)
        for (args, before) in Self.commands {
            try Self.prepare(before, common: common, dir: dir)
            if args == ["webpush", "keygen", "--out", "vapid-out.pem"] {
                try? FileManager.default.removeItem(atPath: dir.path("vapid-out.pem"))
            }
            // demo and webpush keygen take no --config (they ignore it or have their own).
            let extra = args[0] == "demo" ? ["--spool", dir.path("demo")] : args[0].hasPrefix("-") ? [] : common
            let r = try Self.run(args + extra, redirect: redirect, dir: dir)
            #expect(r.status == 74, "\(args) \(redirect): exit \(r.status), stderr: \(r.stderr)")
            #expect(r.stderr.contains("pushspool: cannot write output: \(reason)"), "\(args) \(redirect): \(r.stderr)")
        }
        // A closed stdout never lent its descriptor to a file the command opened.
        #expect(!(dir.read("spool/registry.sqlite-wal") ?? "").contains("\"platform\""))
    }

    @Test("a reader that goes away ends a long listing quietly, as it ends ls")
    func closedPipe() throws {
        let dir = TempDir("pushspool-out")
        let common = try Self.setUp(dir)
        dir.write("many.jsonl", (1...20_000).map { #"{"id": "many-\#($0)", "platform": "fcm", "handle": "fcm-many-\#($0)", "tags": ["t"]}"# }
            .joined(separator: "\n") + "\n")
        let imported = try runPushspool(["import", "many.jsonl"] + common, cwd: dir.url)
        #expect(imported.status == 0, "\(imported.stderr)")
        // The listing's own exit status, through bash's PIPESTATUS (the pipeline's is head's).
        let status = try runPushspoolVia("/bin/bash", ["-c", "\"$0\" devices \"$@\" | head -1 >/dev/null; echo ${PIPESTATUS[0]}",
                                                       Paths.binary.path] + common)
        let code = status.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(code == "0" || code == "141", "devices | head -1 ended with \(code): \(status.stderr)")
        #expect(status.stderr.isEmpty, "\(status.stderr)")
    }

    @Test(.enabled(if: Paths.nodeAvailable)) func hubSyncOutput() throws {
        let bench = try AzureHubIntegrationTests.Bench()
        let env = "NH_CONNECTION_STRING='\(bench.connectionString)'"
        for (redirect, reason) in [(">/dev/full", "No space left on device"), (">&-", "Bad file descriptor")] {
            let r = try runPushspoolVia("/bin/sh", ["-c", "export \(env); exec \"$0\" \"$@\" \(redirect)", Paths.binary.path,
                                                    "hub", "sync", "--spool", bench.spool, "--config", bench.dir.path("pushspool.json")])
            #expect(r.status == 74 && r.stderr.contains("pushspool: cannot write output: \(reason)"), "\(redirect): \(r.stderr)")
        }
    }
}
