import Foundation
import Testing

/// Issue 25: a transport that could not be built (a `tls.ca_file` OpenSSL cannot read) became a
/// client whose every request failed, so a bad CA file showed up job by job as failed pushes.
/// It is a configuration problem at start: `config --check` and `run` exit 78 with one line
/// naming the field, once however many providers use the CA (HTTP/2 and HTTP/1.1 alike).
@Suite struct TransportSetupTests {
    @Test func aCAFileWithNoReadableCertificateStopsConfigCheckAndRun() throws {
        let dir = TempDir("pushspool-ca")
        dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
        dir.write("vapid.pem", try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8))
        dir.write("pushspool.json", #"""
            {"spool": "jobs", "routes": {"web": "webpush", "wns": "wns"}, "tls": {"ca_file": "ca.pem"},
             "providers": {"webpush": {"vapid_private_key_file": "vapid.pem", "subject": "mailto:ops@example.com"},
                           "wns": {"client_id": "ms-app://s-1", "client_secret": "not-a-secret"}}}
            """#)
        let config = dir.path("pushspool.json")
        let line = "tls.ca_file: ca.pem holds no PEM certificate OpenSSL can read"
        let check = try runPushspool(["config", "--check", "--config", config], cwd: dir.url)
        #expect(check.status == 78, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.components(separatedBy: line).count == 2, "\(check.stderr)")
        let initialized = try runPushspool(["init", "--config", config], cwd: dir.url)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let run = try runPushspool(["run", "--once", "--config", config], cwd: dir.url)
        #expect(run.status == 78, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.components(separatedBy: line).count == 2, "\(run.stderr)")
    }
}
