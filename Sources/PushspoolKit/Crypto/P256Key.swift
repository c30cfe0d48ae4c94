import CCrypto
import Foundation

/// A P-256 key (public, or private with its public half) for ECDH, held as an OpenSSL EVP_PKEY.
/// Immutable after creation, so it may be shared between threads.
public final class P256Key: @unchecked Sendable {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// The P-256 domain parameters alone (no key), made once: the template every generated key
    /// and every public point is made from. Web Push makes two keys per message, and OpenSSL 3
    /// would otherwise look the algorithm up by name for each (`EVP_PKEY_CTX_new_from_name`) or
    /// run its whole decoder machinery on a DER SubjectPublicKeyInfo (`d2i_PUBKEY`, ~130 µs).
    private static let parameters: P256Key? = {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        var params: OpaquePointer?
        guard EVP_PKEY_paramgen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
              EVP_PKEY_generate(ctx, &params) == 1, let params else { return nil }
        return P256Key(owning: params)
    }()

    private static func template() throws -> OpaquePointer {
        guard let parameters else { throw CryptoError("P-256 parameters") }
        return parameters.pkey
    }

    /// A fresh random key pair.
    public static func generate() throws -> P256Key {
        guard let ctx = EVP_PKEY_CTX_new(try template(), nil) else { throw CryptoError("EC context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1 else { throw CryptoError("EC keygen init") }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else { throw CryptoError("EC keygen") }
        return P256Key(owning: key)
    }

    /// A public key from its uncompressed point (65 bytes, 0x04 ‖ X ‖ Y); refuses points not on
    /// the curve (OpenSSL decodes the point with an on-curve check).
    public convenience init(publicKey point: [UInt8]) throws {
        guard point.count == 65, point[0] == 0x04 else { throw CryptoError("not an uncompressed P-256 point") }
        let template = try Self.template()
        guard let key = EVP_PKEY_new() else { throw CryptoError("EVP_PKEY") }
        guard EVP_PKEY_copy_parameters(key, template) == 1,
              EVP_PKEY_set1_encoded_public_key(key, point, point.count) == 1 else {
            EVP_PKEY_free(key)
            throw CryptoError("not a P-256 public key")
        }
        self.init(owning: key)
    }

    /// A key pair from its raw private scalar (32 bytes) and public point (tests with fixed keys).
    public convenience init(privateKey d: [UInt8], publicKey point: [UInt8]) throws {
        guard d.count == 32, point.count == 65 else { throw CryptoError("P-256 private key must be 32 bytes") }
        // SEC 1 ECPrivateKey: version 1, the scalar, [0] prime256v1, [1] the public point.
        let der: [UInt8] = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + d
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0xA1, 0x44, 0x03, 0x42, 0x00] + point
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &p, buf.count)
        }
        guard let key else { throw CryptoError("not a P-256 private key") }
        self.init(owning: key)
    }

    /// The uncompressed public point, 65 bytes.
    public var publicKey: [UInt8] { Self.uncompressedPoint(pkey) }

    static func uncompressedPoint(_ pkey: OpaquePointer) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let n = EVP_PKEY_get1_encoded_public_key(pkey, &out)
        guard n > 0, let out else { return [] }
        defer { ccrypto_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: n))
    }

    /// ECDH: the 32-byte X coordinate of our private key times `peer`'s public point.
    ///
    /// The peer is not validated again here: every P256Key's point was checked to be on the curve
    /// when it was decoded (or is one we generated), and P-256 has cofactor 1, so that is the whole
    /// check. `EVP_PKEY_derive_set_peer` would repeat it and add a scalar multiplication by the
    /// group order, doubling the cost of the derivation.
    public func sharedSecret(with peer: P256Key) throws -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else { throw CryptoError("ECDH context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer_ex(ctx, peer.pkey, 0) == 1 else {
            throw CryptoError("ECDH init")
        }
        var len = 0
        guard EVP_PKEY_derive(ctx, nil, &len) == 1 else { throw CryptoError("ECDH size") }
        var secret = [UInt8](repeating: 0, count: len)
        guard EVP_PKEY_derive(ctx, &secret, &len) == 1 else { throw CryptoError("ECDH") }
        return Array(secret.prefix(len))
    }

    /// The private key as PEM PKCS#8 (`BEGIN PRIVATE KEY`), what `SigningKey(pem:)` reads.
    public func pkcs8PEM() throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError("BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else { throw CryptoError("PEM write") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = BIO_read(bio, &chunk, Int32(chunk.count))
            if n <= 0 { break }
            bytes += chunk.prefix(Int(n))
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension SigningKey {
    /// An EC signing key's public point, uncompressed (65 bytes); empty for RSA keys.
    public var uncompressedPublicKey: [UInt8] { kind == .ec ? P256Key.uncompressedPoint(pkey) : [] }
}
