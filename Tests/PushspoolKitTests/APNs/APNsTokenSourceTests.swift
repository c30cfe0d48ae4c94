import Foundation
import PushspoolCore
import Testing
@testable import PushspoolKit

struct APNsTokenSourceTests {
    func source(_ clock: ManualClock, dir: URL? = nil) -> APNsTokenSource {
        APNsTokenSource(teamID: APNsFixtures.teamID, keyID: APNsFixtures.keyID, key: APNsFixtures.key,
                        cache: CredentialCache(directory: dir, clock: { clock.now }))
    }

    @Test func tokenCarriesKidIssAndIat() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_700_000_000))
        let jwt = try source(clock).current()
        let decoded = try #require(APNsFixtures.decodeJWT(jwt))
        #expect(decoded.header["alg"] as? String == "ES256")
        #expect(decoded.header["kid"] as? String == "TESTKEY123")
        #expect(decoded.claims["iss"] as? String == "TEAMID1234")
        #expect(decoded.claims["iat"] as? Int == 1_700_000_000)
        #expect(decoded.claims.count == 2, "no exp/aud: Apple wants iss and iat only")
    }

    @Test func oneTokenUntilFiftyMinutesThenANewOne() throws {
        let clock = ManualClock()
        let tokens = source(clock)
        let first = try tokens.current()
        clock.advance(49 * 60)
        #expect(try tokens.current() == first)
        clock.advance(60 + 1)
        #expect(try tokens.current() != first)
    }

    @Test func sharedAcrossSourcesThroughTheSpoolState() throws {
        let dir = TempDir()
        let clock = ManualClock()
        let a = try source(clock, dir: dir.url).current()
        let b = try source(clock, dir: dir.url).current()   // another process's view of the same spool
        #expect(a == b)
        let file = dir.url.appendingPathComponent("apns-TEAMID1234-TESTKEY123.json")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func expiredTokenIsReplacedButNeverWithinTwentyMinutes() throws {
        let clock = ManualClock()
        let tokens = source(clock)
        let first = try tokens.current()
        clock.advance(10 * 60)
        #expect(tokens.invalidate(first) == false, "younger than 20 min: keep it (TooManyProviderTokenUpdates)")
        #expect(try tokens.current() == first)
        clock.advance(11 * 60)
        #expect(tokens.invalidate(first) == true)
        let second = try tokens.current()
        #expect(second != first)
        #expect(APNsFixtures.decodeJWT(second)?.claims["iat"] as? Int == Int(clock.now.timeIntervalSince1970))
    }
}

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

    @Test func rejectsAnRSAKeyAndAMissingCAFile() throws {
        let dir = TempDir()
        let account = try String(contentsOf: Paths.fixture("service-account.json"), encoding: .utf8)
        let rsaPEM = try #require(try JSONParser.parse(account)["private_key"]?.stringValue)
        dir.write("rsa.pem", rsaPEM)
        var config = APNsFixtures.config()
        config.keyFile = dir.path("rsa.pem")
        var context = APNsFixtures.context()
        context.config.tls.caFile = dir.path("missing-ca.pem")
        #expect {
            _ = try APNsProvider(config: config, context: context)
        } throws: { error in
            let problems = (error as? ProviderSetupError)?.problems ?? []
            return problems.count == 2 && problems[0].contains("RSA") && problems[1].hasPrefix("tls.ca_file:")
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
