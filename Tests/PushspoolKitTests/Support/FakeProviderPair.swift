import Foundation

/// The fake APNs and FCM servers with what `run` needs to send to them, for tests that run a
/// dispatcher beside `serve`: both started in `dir`, the FCM service account (its token URI at the
/// fake) and the APNs key written there, and the `providers` section that names both.
struct FakeProviderPair {
    let apns: FakeServer
    let fcm: FakeServer

    init(in dir: TempDir, apnsArgs: [String: String] = [:]) throws {
        apns = try FakeServer("apns", args: apnsArgs, dir: dir)
        fcm = try FakeServer("fcm", dir: dir)
        let account = try String(contentsOf: Paths.fixture("service-account.json"), encoding: .utf8)
        dir.write("service-account.json", account.replacingOccurrences(of: "PORT", with: String(fcm.port)))
        dir.write("AuthKey_TESTKEY123.p8", try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8))
    }

    /// `"providers": {…}` and `"tls"` (the fakes' CA), for the config file.
    var configSections: String {
        """
        "providers": {
           "apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
                    "topic": "com.example.app", "environment": "production", "endpoint": "\(apns.url)"},
           "fcm": {"service_account_file": "service-account.json", "endpoint": "\(fcm.url)", "iid_endpoint": "\(fcm.url)"}},
         "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}
        """
    }
}
