import CCrypto

/// SHA-256 through the system libcrypto (bearer tokens are stored and compared as digests).
public enum SHA256 {
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var n: UInt32 = 0
        _ = EVP_Digest(bytes, bytes.count, &out, &n, EVP_sha256(), nil)
        return out
    }
}
