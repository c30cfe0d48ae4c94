import Foundation
import Synchronization
import Testing
import PushspoolCore
@testable import PushspoolKit

@Suite struct VAPIDTests {
    final class Clock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(_ s: Double) { now.withLock { $0 = $0.addingTimeInterval(s) } }
    }

    func source(_ clock: Clock) throws -> VAPIDTokenSource {
        let key = try SigningKey(pem: try P256Key.generate().pkcs8PEM())
        return VAPIDTokenSource(key: key, subject: "mailto:ops@example.com",
                                cache: CredentialCache(directory: nil, clock: { clock.now.withLock { $0 } }))
    }

    @Test func tokenIsCachedPerOriginAndRenewedBeforeExp() throws {
        let clock = Clock()
        let vapid = try source(clock)
        let a = try vapid.token(origin: "https://fcm.googleapis.com")
        #expect(try vapid.token(origin: "https://fcm.googleapis.com") == a)
        let b = try vapid.token(origin: "https://updates.push.services.mozilla.com")
        #expect(a != b)
        let claims = try JSONParser.parse(Base64URLDecoding.decode(String(a.split(separator: ".")[1]))!)
        #expect(claims["aud"] == .string("https://fcm.googleapis.com"))
        #expect(claims["exp"] == .int(1_800_000_000 + 12 * 3600))
        #expect(claims["sub"] == .string("mailto:ops@example.com"))
        clock.advance(10 * 3600)
        #expect(try vapid.token(origin: "https://fcm.googleapis.com") == a)
        clock.advance(1.5 * 3600)   // within the last hour: re-signed
        #expect(try vapid.token(origin: "https://fcm.googleapis.com") != a)
        let header = try vapid.authorization(origin: "https://fcm.googleapis.com")
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(", k=\(vapid.publicKey)"))
        #expect(Base64URLDecoding.decode(vapid.publicKey)?.count == 65)
    }

    /// Node's own crypto checks the JWT with nothing but the header's `k`.
    @Test(.enabled(if: Paths.nodeAvailable)) func nodeVerifiesTheJWTWithK() throws {
        let key = try SigningKey(pem: try P256Key.generate().pkcs8PEM())
        let vapid = VAPIDTokenSource(key: key, subject: "https://example.com/contact", cache: CredentialCache(directory: nil))
        let header = try vapid.authorization(origin: "https://127.0.0.1:8443")
        let script = """
        const crypto = require('crypto');
        const [header, origin] = process.argv.slice(1);
        const m = /^vapid t=([^,]+), k=(.+)$/.exec(header);
        const [h, c, s] = m[1].split('.');
        const k = Buffer.from(m[2], 'base64url');
        const key = crypto.createPublicKey({ key: { kty: 'EC', crv: 'P-256',
          x: k.subarray(1, 33).toString('base64url'), y: k.subarray(33).toString('base64url') }, format: 'jwk' });
        const ok = crypto.verify('sha256', Buffer.from(h + '.' + c), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
        const head = JSON.parse(Buffer.from(h, 'base64url'));
        const claims = JSON.parse(Buffer.from(c, 'base64url'));
        const now = Date.now() / 1000;
        const good = ok && head.alg === 'ES256' && claims.aud === origin && claims.exp > now
          && claims.exp <= now + 24 * 3600 && claims.sub === 'https://example.com/contact';
        process.stdout.write(good ? 'verified' : 'refused ' + JSON.stringify({ ok, head, claims }));
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["node", "-e", script, header, "https://127.0.0.1:8443"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: readToEnd(out.fileHandleForReading.fileDescriptor), as: UTF8.self)
        p.waitUntilExit()
        #expect(text == "verified")
    }
}
