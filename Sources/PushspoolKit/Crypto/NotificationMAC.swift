import CCrypto
import PushspoolCore

/// The keyed half of `NotificationID`: HMAC-SHA256 (libcrypto) over an id's header and its
/// device's installation id, truncated to 128 bits, with the registry's secret key. Verifying
/// compares in constant time (`ConstantTime`), so a forged id's timing tells nothing of how
/// much of its MAC was right.
public struct NotificationMAC: Sendable {
    private let key: [UInt8]

    public init(key: [UInt8]) {
        self.key = key
    }

    /// The id of job `job`'s push to the device with registry key `device` (0: a hub send).
    public func id(job: Int64, device: Int64, platform: Platform, installationID: String) -> NotificationID {
        NotificationID(job: job, device: device, platform: platform,
                       mac: mac(job: job, device: device, platform: platform, installationID: installationID))
    }

    /// The id's text bytes, as a push carries it (`id(…).utf8`, with less copying: one per device).
    /// Two allocations an id: the MAC input, reused for the id's bytes, and its text.
    public func idBytes(job: Int64, device: Int64, platform: Platform, installationID: String) -> [UInt8] {
        var bytes = NotificationID.macInput(job: job, device: device, platform: platform, installationID: installationID)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) { out in
            var n: UInt32 = 0
            _ = HMAC(EVP_sha256(), key, Int32(key.count), bytes, bytes.count, out.baseAddress, &n)
            bytes.removeLast(bytes.count - NotificationID.headerBytes)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: out[0..<NotificationID.macBytes]))
        }
        return Base64URLDecoding.encodedBytes(bytes)
    }

    /// Whether `id`'s MAC is the one its header and `installationID` give: always the same work.
    public func verifies(_ id: NotificationID, installationID: String) -> Bool {
        let expected = mac(job: id.job, device: id.device, platform: id.platform, installationID: installationID)
        return ConstantTime.equal(expected, id.mac)
    }

    private func mac(job: Int64, device: Int64, platform: Platform, installationID: String) -> [UInt8] {
        let input = NotificationID.macInput(job: job, device: device, platform: platform, installationID: installationID)
        return Array(HMAC256.mac(key: key, message: input).prefix(NotificationID.macBytes))
    }

    /// 32 bytes from the system's random source (getrandom), for a new registry.
    public static func newKey() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &g) }
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out += [digits[Int(b >> 4)], digits[Int(b & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }

    /// A stored key: 64 hex digits; nil otherwise.
    public static func key(hex: String) -> [UInt8]? {
        let chars = Array(hex.utf8)
        guard chars.count == 64 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - 87
            default: nil
            }
        }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }
}
