import CCrypto

/// RFC 8291 message encryption for Web Push (`Content-Encoding: aes128gcm`, RFC 8188), one record.
///
/// Per message: a fresh ephemeral P-256 key (the "application server" key of RFC 8291, not the
/// VAPID key) and a random 16-byte salt; ECDH with the browser's `p256dh`, HKDF-SHA-256 keyed by
/// the `auth` secret, AES-128-GCM. The body is the RFC 8188 header (salt ‖ rs ‖ idlen ‖ keyid, the
/// keyid being the ephemeral public key) followed by the single record: plaintext ‖ 0x02, sealed.
public enum WebPushEncryption {
    /// The record size written in the header; push services accept bodies up to 4096 bytes.
    public static let recordSize: UInt32 = 4096
    /// salt 16 + rs 4 + idlen 1 + keyid 65.
    public static let headerBytes = 86
    static let tagBytes = 16

    public struct Keys: Sendable {
        /// Content-encryption key (16 bytes) and nonce (12 bytes).
        var cek: [UInt8]
        var nonce: [UInt8]
    }

    /// Encrypts `plaintext` for the subscription (`p256dh`, `auth`). `ephemeral` and `salt` are
    /// drawn fresh unless given (tests pass RFC 8291 Appendix A's).
    public static func encrypt(_ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8],
                               ephemeral: P256Key? = nil, salt: [UInt8]? = nil) throws -> [UInt8] {
        guard plaintext.count + 1 + tagBytes <= Int(recordSize) - headerBytes else {
            throw CryptoError("Web Push plaintext of \(plaintext.count) bytes does not fit one 4096-byte record")
        }
        let receiver = try P256Key(publicKey: p256dh)
        let sender = try ephemeral ?? P256Key.generate()
        let salt = try salt ?? randomBytes(16)
        guard salt.count == 16, auth.count == 16 else { throw CryptoError("salt and auth must be 16 bytes") }
        let senderPublic = sender.publicKey
        let secret = try sender.sharedSecret(with: receiver)
        let keys = derive(secret: secret, auth: auth, salt: salt, receiverPublic: p256dh, senderPublic: senderPublic)
        let sealed = try AESGCM.seal(plaintext + [0x02], key: keys.cek, nonce: keys.nonce)
        var header = salt
        header += [UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF), UInt8(recordSize & 0xFF)]
        header.append(UInt8(senderPublic.count))
        header += senderPublic
        return header + sealed
    }

    /// Decrypts a one-record aes128gcm body with the receiver's key pair and auth secret (what a
    /// browser does; used by tests and the benchmark to check what was sent).
    public static func decrypt(_ body: [UInt8], receiver: P256Key, auth: [UInt8]) throws -> [UInt8] {
        guard body.count >= 21 else { throw CryptoError("aes128gcm body shorter than its header") }
        let salt = Array(body[0..<16])
        let idlen = Int(body[20])
        guard idlen == 65, body.count >= 21 + idlen + tagBytes + 1 else { throw CryptoError("aes128gcm header keyid is not a P-256 key") }
        let senderPublic = Array(body[21..<(21 + idlen)])
        let sender = try P256Key(publicKey: senderPublic)
        let secret = try receiver.sharedSecret(with: sender)
        let keys = derive(secret: secret, auth: auth, salt: salt, receiverPublic: receiver.publicKey, senderPublic: senderPublic)
        var padded = try AESGCM.open(Array(body[(21 + idlen)...]), key: keys.cek, nonce: keys.nonce)
        while padded.last == 0 { padded.removeLast() }
        guard padded.last == 0x02 else { throw CryptoError("aes128gcm record has no last-record delimiter") }
        padded.removeLast()
        return padded
    }

    /// RFC 8291 §3.3–3.4 and RFC 8188 §2.2.
    static func derive(secret: [UInt8], auth: [UInt8], salt: [UInt8], receiverPublic: [UInt8], senderPublic: [UInt8]) -> Keys {
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = HKDF.derive(salt: auth, ikm: secret, info: keyInfo, length: 32)
        let prk = HKDF.extract(salt: salt, ikm: ikm)
        let cek = HKDF.expand(prk: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = HKDF.expand(prk: prk, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        return Keys(cek: cek, nonce: nonce)
    }

    static func randomBytes(_ n: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        guard RAND_bytes(&out, Int32(n)) == 1 else { throw CryptoError("RAND_bytes") }
        return out
    }
}

/// HKDF-SHA-256 (RFC 5869) for outputs of at most 32 bytes: one expand block is enough.
enum HKDF {
    static func extract(salt: [UInt8], ikm: [UInt8]) -> [UInt8] { HMAC256.mac(key: salt, message: ikm) }

    static func expand(prk: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length <= 32)
        return Array(HMAC256.mac(key: prk, message: info + [0x01]).prefix(length))
    }

    static func derive(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        expand(prk: extract(salt: salt, ikm: ikm), info: info, length: length)
    }
}

/// AES-128-GCM through EVP, 12-byte nonce, 16-byte tag appended to the ciphertext.
enum AESGCM {
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError("cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nonce) == 1 else { throw CryptoError("AES-GCM init") }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16 + WebPushEncryption.tagBytes)
        var n: Int32 = 0
        guard EVP_EncryptUpdate(ctx, &out, &n, plaintext, Int32(plaintext.count)) == 1 else { throw CryptoError("AES-GCM encrypt") }
        var total = Int(n)
        let finalOK = out.withUnsafeMutableBufferPointer { EVP_EncryptFinal_ex(ctx, $0.baseAddress! + total, &n) }
        guard finalOK == 1 else { throw CryptoError("AES-GCM final") }
        total += Int(n)
        var tag = [UInt8](repeating: 0, count: WebPushEncryption.tagBytes)
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tag.count), &tag) == 1 else { throw CryptoError("AES-GCM tag") }
        return Array(out.prefix(total)) + tag
    }

    static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        let tagCount = WebPushEncryption.tagBytes
        guard sealed.count >= tagCount else { throw CryptoError("AES-GCM input shorter than its tag") }
        let ciphertext = Array(sealed.dropLast(tagCount))
        var tag = Array(sealed.suffix(tagCount))
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError("cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nonce) == 1 else { throw CryptoError("AES-GCM init") }
        var out = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var n: Int32 = 0
        guard EVP_DecryptUpdate(ctx, &out, &n, ciphertext, Int32(ciphertext.count)) == 1 else { throw CryptoError("AES-GCM decrypt") }
        var total = Int(n)
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagCount), &tag) == 1 else { throw CryptoError("AES-GCM tag") }
        let finalOK = out.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(ctx, $0.baseAddress! + total, &n) }
        guard finalOK == 1 else { throw CryptoError("AES-GCM authentication failed") }
        total += Int(n)
        return Array(out.prefix(total))
    }
}
