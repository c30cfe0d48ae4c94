/// A notification id (§ The app talks back): what a tracked push carries instead of, or beside,
/// its text, and what the app hands back to fetch a secure job's content or report an event.
///
/// Layout (34 bytes, written as 46 characters of unpadded base64url):
///
///     version (1) ‖ job number (8, big-endian) ‖ device key (8) ‖ platform (1) ‖ MAC (16)
///
/// The job number is handed out by the registry once per tracked job; the device key is the
/// registry's own key of the device (SQLite's rowid, PostgreSQL's `seq`; 0 for a hub send, one id
/// per job and platform). The MAC (HMAC-SHA256 truncated to 128 bits, keyed with a secret kept in
/// the registry) covers the first 18 bytes and the device's installation id: an id is derived
/// when its push is sent, so a million-device job writes no row per device, and any host sharing
/// the registry can verify any id. Without the key nobody can make an id that verifies (128 bits),
/// and a device key reused by another installation does not inherit the old one's ids.
///
/// This type only lays the bytes out and reads them back; computing and checking the MAC is
/// `NotificationMAC`'s (PushspoolKit), through libcrypto.
public struct NotificationID: Sendable, Hashable {
    public static let version: UInt8 = 1
    public static let macBytes = 16
    /// Version, job number, device key, platform.
    public static let headerBytes = 18
    public static let byteCount = headerBytes + macBytes
    /// Unpadded base64url of `byteCount` bytes.
    public static let textLength = (byteCount * 8 + 5) / 6

    public var job: Int64
    /// The device's registry key; 0 for a hub send.
    public var device: Int64
    public var platform: Platform
    public var mac: [UInt8]

    public init(job: Int64, device: Int64, platform: Platform, mac: [UInt8]) {
        self.job = job
        self.device = device
        self.platform = platform
        self.mac = mac
    }

    /// Whether it names a hub send (one id per job and platform) rather than one device.
    public var isHub: Bool { device == 0 }

    /// The bytes the MAC covers: the header, then the installation id's UTF-8 (empty for a hub id).
    public static func macInput(job: Int64, device: Int64, platform: Platform, installationID: String) -> [UInt8] {
        var out = header(job: job, device: device, platform: platform)
        out.append(contentsOf: installationID.utf8)
        return out
    }

    /// The header (`headerBytes`: version, job number, device key, platform code) written to the
    /// start of `out`, for a caller that builds the MAC input without an array of its own.
    public static func writeHeader(job: Int64, device: Int64, platform: Platform, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= headerBytes)
        out[0] = version
        out.storeBytes(of: UInt64(bitPattern: job).bigEndian, toByteOffset: 1, as: UInt64.self)
        out.storeBytes(of: UInt64(bitPattern: device).bigEndian, toByteOffset: 9, as: UInt64.self)
        out[17] = platformCode(platform)
    }

    /// Version, job number, device key, platform code.
    static func header(job: Int64, device: Int64, platform: Platform) -> [UInt8] {
        var out: [UInt8] = [version]
        out.reserveCapacity(byteCount + 64)
        for v in [job, device] {
            let u = UInt64(bitPattern: v)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: u >> UInt64(shift))) }
        }
        out.append(platformCode(platform))
        return out
    }

    /// The text form: 46 characters of base64url.
    public var text: String { String(decoding: utf8, as: UTF8.self) }

    /// The text form's bytes, as a payload carries them.
    public var utf8: [UInt8] {
        var bytes = Self.header(job: job, device: device, platform: platform)
        bytes.append(contentsOf: mac.prefix(Self.macBytes))
        return Base64URLDecoding.encodedBytes(bytes)
    }

    /// The text form's bytes of the id whose MAC input (`macInput`) is `input` and whose MAC is
    /// `mac`: the header is the input's first bytes (a send makes one id per device: one array).
    public static func utf8(macInput input: [UInt8], mac: some Collection<UInt8>) -> [UInt8] {
        var bytes = Array(input.prefix(headerBytes))
        bytes.append(contentsOf: mac.prefix(macBytes))
        return Base64URLDecoding.encodedBytes(bytes)
    }

    /// Reads an id's shape: exactly `textLength` characters of the base64url alphabet (no padding,
    /// no `+` or `/`), the known version, a known platform, a positive job number. Says nothing of
    /// its MAC: that takes the key (and a miss must cost what a hit does, so callers verify a
    /// stand-in when this answers nil).
    public static func parse(_ text: String) -> NotificationID? {
        let utf8 = text.utf8
        guard utf8.count == textLength, utf8.allSatisfy(isAlphabet), let bytes = Base64URLDecoding.decode(text),
              bytes.count == byteCount, bytes[0] == version, let platform = platform(code: bytes[17]) else { return nil }
        func int64(at offset: Int) -> Int64 {
            var u: UInt64 = 0
            for i in offset..<(offset + 8) { u = u << 8 | UInt64(bytes[i]) }
            return Int64(bitPattern: u)
        }
        let job = int64(at: 1), device = int64(at: 9)
        guard job > 0, device >= 0 else { return nil }
        // The last character carries 2 unused bits (34 bytes = 45⅓ characters): a second spelling
        // of the same bytes is no id of ours.
        guard Base64URLDecoding.encode(bytes) == text else { return nil }
        return NotificationID(job: job, device: device, platform: platform, mac: Array(bytes[headerBytes...]))
    }

    private static func isAlphabet(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
    }

    /// Fixed codes, never the enum's order: ids outlive releases.
    static func platformCode(_ p: Platform) -> UInt8 {
        switch p {
        case .apns: 1
        case .fcm: 2
        case .wns: 3
        case .web: 4
        case .hms: 5
        case .adm: 6
        }
    }

    static func platform(code: UInt8) -> Platform? {
        switch code {
        case 1: .apns
        case 2: .fcm
        case 3: .wns
        case 4: .web
        case 5: .hms
        case 6: .adm
        default: nil
        }
    }
}
