import Foundation

/// `Pushspool-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. The time
/// is signed with the body, so a receiver that rejects a stale `t` cannot be fed a recorded
/// request again later.
enum WebhookSignature {
    static let header = "Pushspool-Signature"

    static func value(secret: String, body: [UInt8], at time: Int) -> String {
        let mac = HMAC256.mac(key: Array(secret.utf8), message: Array("\(time).".utf8) + body)
        return "t=\(time),v1=" + hex(mac)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
