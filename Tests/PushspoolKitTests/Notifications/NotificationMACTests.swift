import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Notification ids' MAC: HMAC-SHA256 (libcrypto) over the header and the installation id,
/// truncated to 128 bits; the per-device fast path makes the same bytes; any change to the id,
/// the key or the installation id fails verification.
@Suite struct NotificationMACTests {
    static let key = Array("0123456789abcdef0123456789abcdef".utf8)

    @Test func macIsTruncatedHMACSHA256OverHeaderAndInstallation() throws {
        let mac = NotificationMAC(key: Self.key)
        let id = mac.id(job: 7, device: 42, platform: .fcm, installationID: "phone-1")
        let input = NotificationID.macInput(job: 7, device: 42, platform: .fcm, installationID: "phone-1")
        #expect(id.mac == Array(HMAC256.mac(key: Self.key, message: input).prefix(16)))
        #expect(mac.idBytes(job: 7, device: 42, platform: .fcm, installationID: "phone-1") == id.utf8)
        #expect(mac.verifies(id, installationID: "phone-1"))
        #expect(!mac.verifies(id, installationID: "phone-2"), "another installation")
        #expect(!NotificationMAC(key: NotificationMAC.newKey()).verifies(id, installationID: "phone-1"), "another key")
        var moved = id
        moved.device = 43
        #expect(!mac.verifies(moved, installationID: "phone-1"), "another device key")
        moved = id
        moved.platform = .apns
        #expect(!mac.verifies(moved, installationID: "phone-1"), "another platform")
        // RFC 4231 test case 2, through the same HMAC.
        let rfc = HMAC256.mac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(NotificationMAC.hex(rfc) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func keysAreRandomAndStoredAsHex() {
        let a = NotificationMAC.newKey(), b = NotificationMAC.newKey()
        #expect(a.count == 32 && a != b)
        #expect(NotificationMAC.key(hex: NotificationMAC.hex(a)) == a)
        #expect(NotificationMAC.key(hex: "zz") == nil && NotificationMAC.key(hex: String(repeating: "G", count: 64)) == nil)
    }
}
