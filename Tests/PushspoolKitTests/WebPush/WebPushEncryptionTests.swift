import Testing
import PushspoolCore
@testable import PushspoolKit

/// RFC 8291 Appendix A, "Push Message Encryption Example".
enum RFC8291Example {
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let message = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func b(_ s: String) -> [UInt8] { Base64URLDecoding.decode(s)! }
}

@Suite struct WebPushEncryptionTests {
    typealias X = RFC8291Example

    @Test func encryptingWithTheRFCKeysAndSaltGivesItsBytes() throws {
        let sender = try P256Key(privateKey: X.b(X.asPrivate), publicKey: X.b(X.asPublic))
        #expect(sender.publicKey == X.b(X.asPublic))
        let body = try WebPushEncryption.encrypt(Array(X.plaintext.utf8), p256dh: X.b(X.uaPublic), auth: X.b(X.auth),
                                                 ephemeral: sender, salt: X.b(X.salt))
        #expect(Base64URLDecoding.encode(body) == X.message)
    }

    @Test func decryptingTheRFCMessageGivesItsPlaintext() throws {
        let receiver = try P256Key(privateKey: X.b(X.uaPrivate), publicKey: X.b(X.uaPublic))
        let plain = try WebPushEncryption.decrypt(X.b(X.message), receiver: receiver, auth: X.b(X.auth))
        #expect(String(decoding: plain, as: UTF8.self) == X.plaintext)
    }

    @Test func freshKeysRoundTripAndDifferEveryMessage() throws {
        let receiver = try P256Key.generate()
        let auth = try WebPushEncryption.randomBytes(16)
        let text = Array(#"{"body":"From bob: hi"}"#.utf8)
        let one = try WebPushEncryption.encrypt(text, p256dh: receiver.publicKey, auth: auth)
        let two = try WebPushEncryption.encrypt(text, p256dh: receiver.publicKey, auth: auth)
        #expect(one != two)
        #expect(one.count == WebPushEncryption.headerBytes + text.count + 1 + 16)
        #expect(Array(one[16..<21]) == [0, 0, 0x10, 0, 65])
        #expect(try WebPushEncryption.decrypt(one, receiver: receiver, auth: auth) == text)
        #expect(try WebPushEncryption.decrypt(two, receiver: receiver, auth: auth) == text)
        var tampered = one
        tampered[tampered.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(tampered, receiver: receiver, auth: auth) }
    }

    @Test func largestPlaintextFillsOneRecord() throws {
        let receiver = try P256Key.generate()
        let auth = try WebPushEncryption.randomBytes(16)
        let max = [UInt8](repeating: 0x61, count: WebPushNotification.maxPlaintextBytes)
        #expect(try WebPushEncryption.encrypt(max, p256dh: receiver.publicKey, auth: auth).count == 4096)
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.encrypt(max + [0x61], p256dh: receiver.publicKey, auth: auth)
        }
    }

    @Test func notAPointIsRefused() {
        var point = X.b(X.uaPublic)
        point[40] ^= 0xFF
        #expect(throws: CryptoError.self) { try P256Key(publicKey: point) }
    }
}
