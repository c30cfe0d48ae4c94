/// A UUID that is a pure function of some bytes: the same on every attempt and in every process
/// (a resumed job's resend carries the id its first attempt did), well spread, and cheap enough to
/// make once per notification (an HMAC through OpenSSL cost about a fifth of the instructions of
/// an APNs send).
///
/// Not a cryptographic hash: it identifies a notification to the service, it protects nothing.
/// Two 64-bit FNV-1a lanes over the bytes, each finished with SplitMix64's avalanche and mixed with
/// the other, laid out as an RFC 9562 version 8 (custom) UUID.
public enum StableUUID {
    /// Lowercase `xxxxxxxx-xxxx-8xxx-yxxx-xxxxxxxxxxxx` of the two parts, each closed by a
    /// separator byte (so that `("ab", "c")` and `("a", "bc")` differ).
    public static func make(_ first: String, _ second: String) -> String {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325            // FNV-1a offset basis
        var b: UInt64 = 0x6c62_272e_07bb_0142            // a second basis (FNV-1 128's high half)
        func absorb(_ part: String) {
            for byte in part.utf8 {
                a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
                b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 &+ 0x9E37_79B9
            }
            a = a &* 0x0000_0100_0000_01B3               // a zero byte closes the part
            b = (b ^ 0xFF) &* 0x0000_0100_0000_01B3      // and 0xFF in the second lane
        }
        absorb(first)
        absorb(second)
        var high = mix(a ^ mix(b)), low = mix(b &+ high)
        high = (high & ~0xF000) | 0x8000                   // version 8: custom
        low = (low & ~(0xC0 << 56)) | (0x80 << 56)         // the RFC 9562 variant
        return String(unsafeUninitializedCapacity: 36) { out in
            let hex: StaticString = "0123456789abcdef"
            // `count` hex digits of `word`, from its digit `first` (0: the top one), at `at`.
            func put(_ word: UInt64, first: Int, count: Int, at: Int) {
                for j in 0..<count { out[at + j] = hex.utf8Start[Int((word >> UInt64(60 - 4 * (first + j))) & 0xF)] }
            }
            put(high, first: 0, count: 8, at: 0)
            put(high, first: 8, count: 4, at: 9)
            put(high, first: 12, count: 4, at: 14)
            put(low, first: 0, count: 4, at: 19)
            put(low, first: 4, count: 12, at: 24)
            out[8] = UInt8(ascii: "-")
            out[13] = UInt8(ascii: "-")
            out[18] = UInt8(ascii: "-")
            out[23] = UInt8(ascii: "-")
            return 36
        }
    }

    /// SplitMix64's finalizer: every input bit moves every output bit.
    private static func mix(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
