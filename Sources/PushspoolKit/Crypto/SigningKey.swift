import CCrypto
import Foundation

public struct CryptoError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ what: String) {
        var detail = ""
        let code = ERR_get_error()
        if code != 0 {
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            detail = ": " + String(decoding: buf.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
        }
        ERR_clear_error()
        description = what + detail
    }
}

/// A private key loaded once from PEM (PKCS#8 `BEGIN PRIVATE KEY` as in APNs `.p8` files and
/// Google service accounts, or traditional `BEGIN EC/RSA PRIVATE KEY`). Immutable after loading,
/// so one key is shared by every thread.
public final class SigningKey: @unchecked Sendable {
    public enum Kind: Sendable { case ec, rsa }

    let pkey: OpaquePointer
    public let kind: Kind

    public init(pem: String) throws {
        // BIO_new_mem_buf does not copy: use the BIO only inside withUnsafeBytes.
        let key: OpaquePointer? = Array(pem.utf8).withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { throw CryptoError("not a PEM private key") }
        switch EVP_PKEY_get_id(key) {
        case EVP_PKEY_EC:
            guard EVP_PKEY_get_bits(key) == 256 else {
                EVP_PKEY_free(key)
                throw CryptoError("EC key is not P-256")
            }
            kind = .ec
        case EVP_PKEY_RSA: kind = .rsa
        default:
            EVP_PKEY_free(key)
            throw CryptoError("unsupported key type (expected EC P-256 or RSA)")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// SHA-256 signature: RSA PKCS#1 v1.5 (RS256), or ECDSA as raw 64-byte r‖s (ES256, per JWS).
    public func signSHA256(_ message: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { throw CryptoError("sign init") }
        var len = 0
        guard EVP_DigestSign(ctx, nil, &len, message, message.count) == 1 else { throw CryptoError("sign size") }
        var sig = [UInt8](repeating: 0, count: len)
        guard EVP_DigestSign(ctx, &sig, &len, message, message.count) == 1 else { throw CryptoError("sign") }
        sig.removeSubrange(len...)
        return kind == .ec ? try Self.derToRaw(sig) : sig
    }

    /// DER ECDSA-Sig-Value → r‖s, each left-padded to 32 bytes.
    static func derToRaw(_ der: [UInt8]) throws -> [UInt8] {
        try der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let sig = d2i_ECDSA_SIG(nil, &p, buf.count) else { throw CryptoError("bad DER signature") }
            defer { ECDSA_SIG_free(sig) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(sig, &r, &s)
            var out = [UInt8](repeating: 0, count: 64)
            out.withUnsafeMutableBufferPointer { o in
                _ = BN_bn2binpad(r, o.baseAddress, 32)
                _ = BN_bn2binpad(s, o.baseAddress! + 32, 32)
            }
            return out
        }
    }
}

public enum HMAC256 {
    /// HMAC-SHA256 (Azure SAS tokens sign with the key's text bytes, not its base64 decoding).
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var n: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &out, &n)
        return Array(out.prefix(Int(n)))
    }
}

public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
