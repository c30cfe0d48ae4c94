import Foundation
import PushspoolCore
import Testing
@testable import PushspoolKit

struct APNsSetupTests {
    @Test func reportsEveryProblemAtOnce() {
        var config = APNsFixtures.config(endpoint: "http://insecure.example")
        config.teamID = "SHORT"
        config.keyID = "WAY-TOO-LONG-KEY"
        config.keyFile = "/nonexistent/AuthKey.p8"
        config.topic = " "
        config.environment = "staging"
        let context = APNsFixtures.context()
        #expect {
            _ = try APNsProvider(config: config, context: context)
        } throws: { error in
            guard let setup = error as? ProviderSetupError else { return false }
            let fields = ["team_id", "key_id", "key_file", "topic", "environment", "endpoint"]
            return setup.problems.count == fields.count &&
                fields.allSatisfy { f in setup.problems.contains { $0.hasPrefix("providers.apns.\(f):") } }
        }
    }

    @Test func rejectsAnRSAKey() throws {
        let dir = TempDir()
        let account = try String(contentsOf: Paths.fixture("service-account.json"), encoding: .utf8)
        let rsaPEM = try #require(try JSONParser.parse(account)["private_key"]?.stringValue)
        dir.write("rsa.pem", rsaPEM)
        var config = APNsFixtures.config()
        config.keyFile = dir.path("rsa.pem")
        let context = APNsFixtures.context()
        #expect {
            _ = try APNsProvider(config: config, context: context)
        } throws: { error in
            let problems = (error as? ProviderSetupError)?.problems ?? []
            return problems.count == 1 && problems[0].hasPrefix("providers.apns.key_file:") && problems[0].contains("RSA")
        }
    }

    @Test func acceptsTheFixtureConfigWithRelativeKeyPath() throws {
        var config = APNsFixtures.config(endpoint: "https://127.0.0.1:1")
        config.keyFile = "AuthKey_TESTKEY123.p8"
        var context = APNsFixtures.context()
        context.config.baseDirectory = Paths.fixtures
        let provider = try APNsProvider(config: config, context: context)
        #expect(provider.name == "apns")
        #expect(provider.builder.baseURL == "https://127.0.0.1:1")
        provider.shutdown()
    }

    @Test(arguments: [("production", nil, "https://api.push.apple.com"),
                      ("sandbox", nil, "https://api.sandbox.push.apple.com"),
                      ("sandbox", "https://apns.staging.example:2197", "https://apns.staging.example:2197")])
    func hostFollowsEnvironmentUnlessOverridden(_ environment: String, _ endpoint: String?, _ host: String) throws {
        var config = APNsFixtures.config(endpoint: endpoint)
        config.environment = environment
        let provider = try APNsProvider(config: config, context: APNsFixtures.context())
        #expect(provider.builder.baseURL == host)
        provider.shutdown()
    }
}
