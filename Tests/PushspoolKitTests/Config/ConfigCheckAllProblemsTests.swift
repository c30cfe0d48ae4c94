import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 24 item 8: `config --check` reports every problem in one pass — an unset `env:` secret
/// does not hide the key files behind it, a missing key file is told apart from an unreadable
/// one, and a metrics folder that does not exist or is not writable is a problem.
@Suite struct ConfigCheckAllProblemsTests {
    @Test("examples/config/mixed.json without its secret: the secret and the missing key file, both")
    func mixedExample() throws {
        let dir = TempDir("pushspool-cfg")
        let example = Paths.packageRoot.appendingPathComponent("examples/config/mixed.json").path
        let r = try runPushspool(["config", "--check", "--config", example], cwd: dir.url, env: ["NH_CONNECTION_STRING": ""])
        #expect(r.status == 78)
        #expect(r.stderr.contains("providers.azure.connection_string: environment variable NH_CONNECTION_STRING is not set"), "\(r.stderr)")
        #expect(r.stderr.contains("providers.apns.key_file: cannot read /etc/pushspool/AuthKey_KEY1234567.p8: no such file"), "\(r.stderr)")
        // Nothing that only follows from the placeholder (a connection string "without sb://").
        #expect(!r.stderr.contains("sb://") && !r.stderr.contains("<env:"), "\(r.stderr)")
    }

    @Test("a metrics folder that does not exist is a problem, with the other problems")
    func metricsFolderMissing() throws {
        let dir = TempDir("pushspool-cfg")
        dir.write("pushspool.json", #"{"metrics": {"textfile": "/nonexistent/dir/pushspool.prom"}, "providers": {"fcm": {"service_account_file": "sa.json"}}}"#)
        let r = try runPushspool(["config", "--check", "--config", dir.path("pushspool.json")], cwd: dir.url)
        #expect(r.status == 78)
        #expect(r.stderr.contains("metrics.textfile: the folder /nonexistent/dir does not exist"), "\(r.stderr)")
        #expect(r.stderr.contains("providers.fcm.service_account_file: cannot read \(dir.path("sa.json")): no such file"), "\(r.stderr)")
        dir.write("pushspool.json", #"{"metrics": {"textfile": "pushspool.prom"}}"#)
        let ok = try runPushspool(["config", "--check", "--config", dir.path("pushspool.json")], cwd: dir.url)
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    @Test("as another user: an unreadable key file and an unwritable metrics folder, told as such",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func unreadableAndUnwritable() throws {
        let dir = TempDir("pushspool-cfg")
        chmod(dir.url.path, 0o755)
        try FileManager.default.copyItem(atPath: Paths.fixture("AuthKey_TESTKEY123.p8").path, toPath: dir.path("AuthKey.p8"))
        chmod(dir.path("AuthKey.p8"), 0o600)   // root's: nobody may not read it
        try FileManager.default.createDirectory(atPath: dir.path("metrics"), withIntermediateDirectories: false)
        chmod(dir.path("metrics"), 0o755)
        dir.write("pushspool.json", """
            {"metrics": {"textfile": "metrics/pushspool.prom"},
             "providers": {"apns": {"team_id": "ABCDE12345", "key_id": "TESTKEY123", "key_file": "AuthKey.p8", "topic": "com.example.app"}}}
            """, mode: 0o644)
        let r = try runPushspoolVia("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                         Paths.binaryForOtherUsers.path, "config", "--check", "--config", dir.path("pushspool.json")])
        #expect(r.status == 78)
        #expect(r.stderr.contains("providers.apns.key_file: cannot read \(dir.path("AuthKey.p8")): permission denied for user nobody"), "\(r.stderr)")
        #expect(r.stderr.contains("metrics.textfile: user nobody may not write to \(dir.path("metrics"))"), "\(r.stderr)")
    }
}
