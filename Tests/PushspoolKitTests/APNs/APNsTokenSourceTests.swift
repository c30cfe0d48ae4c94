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
