import CCrypto
import PushspoolCore

/// The keyed half of `NotificationID`: HMAC-SHA256 (libcrypto) over an id's header and its
/// device's installation id, truncated to 128 bits, with the registry's secret key. Verifying
/// compares in constant time (`ConstantTime`), so a forged id's timing tells nothing of how
/// much of its MAC was right.
public struct NotificationMAC: Sendable {
    private let key: [UInt8]
    /// The key set up once for every id (nil only if libcrypto refused: the one-shot `HMAC()` then).
    private let keyed: KeyedHMAC?

    public init(key: [UInt8]) {
        self.key = key
        keyed = KeyedHMAC(key: key)
    }

    /// The id of job `job`'s push to the device with registry key `device` (0: a hub send).
    public func id(job: Int64, device: Int64, platform: Platform, installationID: String) -> NotificationID {
        NotificationID(job: job, device: device, platform: platform,
                       mac: mac(job: job, device: device, platform: platform, installationID: installationID))
    }

    /// The id's text, as a push carries it (`id(…).text`, made per device as it is sent): the MAC
    /// input is laid out in a stack buffer, MACed there by the keyed context, and the id's 46
    /// characters written straight into the inline value returned (no heap).
    public func idText(job: Int64, device: Int64, platform: Platform, installationID: String) -> NotificationIDText {
        withMAC(job: job, device: device, platform: platform, installationID: installationID) { id in
            NotificationIDText { Base64URLDecoding.encode(id, into: $0) }
        }
    }

    /// `idText` as an array.
    public func idBytes(job: Int64, device: Int64, platform: Platform, installationID: String) -> [UInt8] {
        idText(job: job, device: device, platform: platform, installationID: installationID).utf8
    }

    /// Whether `id`'s MAC is the one its header and `installationID` give: always the same work.
    public func verifies(_ id: NotificationID, installationID: String) -> Bool {
        let expected = mac(job: id.job, device: id.device, platform: id.platform, installationID: installationID)
        return ConstantTime.equal(expected, id.mac)
    }

    private func mac(job: Int64, device: Int64, platform: Platform, installationID: String) -> [UInt8] {
        withMAC(job: job, device: device, platform: platform, installationID: installationID) { id in
            Array(id[NotificationID.headerBytes...])
        }
    }

    /// `body` given the id's bytes (header ‖ truncated MAC, `NotificationID.byteCount`), in a
    /// temporary buffer that also held the MAC input.
    private func withMAC<T>(job: Int64, device: Int64, platform: Platform, installationID: String,
                            _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let header = NotificationID.headerBytes
        let inputCount = header + installationID.utf8.count
        return withUnsafeTemporaryAllocation(byteCount: inputCount + Int(EVP_MAX_MD_SIZE), alignment: 8) { buffer in
            NotificationID.writeHeader(job: job, device: device, platform: platform, into: buffer)
            var written = header
            for byte in installationID.utf8 {
                buffer[written] = byte
                written += 1
            }
            let input = UnsafeRawBufferPointer(rebasing: buffer[0..<inputCount])
            let out = UnsafeMutableRawBufferPointer(rebasing: buffer[inputCount...])
            if keyed?.mac(input, into: out) != true {
                var n: UInt32 = 0
                _ = HMAC(EVP_sha256(), key, Int32(key.count), input.baseAddress, input.count,
                         out.baseAddress?.assumingMemoryBound(to: UInt8.self), &n)
            }
            // The id: the header (already in place) and the MAC's first 16 bytes after it. Copied
            // forwards: the two ranges overlap when the installation id is short, and the MAC lies
            // after where it goes.
            for i in 0..<NotificationID.macBytes { buffer[header + i] = buffer[inputCount + i] }
            return body(UnsafeRawBufferPointer(rebasing: buffer[0..<NotificationID.byteCount]))
        }
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
