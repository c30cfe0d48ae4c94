import CCrypto
import Synchronization

/// HMAC-SHA256 (libcrypto's `EVP_MAC`) under one key, keyed once: a broadcast MACs a million ids
/// with the same key, and the one-shot `HMAC()` looks the algorithm up in the provider store (under
/// its lock), makes a context and hashes the key again for every one of them, which cost a secure
/// broadcast about 1.5× a plain one.
///
/// A keyed context is kept as a template; each call takes an idle copy (or duplicates the
/// template when every copy is busy), sets it back to the keyed state (`EVP_MAC_init` with no
/// key reuses the one it has), MACs, and returns it. So each context is used by one thread at a
/// time, and threads never wait for one another's hashing, only for the pop and push.
final class KeyedHMAC: @unchecked Sendable {
    // @unchecked: the contexts are C state; the template is read (duplicated) under `idle`'s lock
    // only, and a copy is used by the one thread that took it from `idle`.
    private let template: OpaquePointer
    private let idle = Mutex<[Context]>([])
    /// One idle copy's address (0: none), taken and put back with one atomic operation each: a
    /// job's producer MACs its devices one after another, and finds its copy here without the
    /// lock; `idle` holds the copies of any other thread MACing at the same time.
    private let spare = Atomic<UInt>(0)

    /// A context copy as it waits in `idle` (C pointers are not Sendable; a copy is handed to one
    /// thread at a time, through the lock).
    private struct Context: @unchecked Sendable {
        let pointer: OpaquePointer
    }
    private static let digestKey: StaticString = "digest"
    private static let sha256: StaticString = "SHA256"

    /// How many idle copies are kept (more threads than this at once: the extras are freed).
    private static let keep = 16

    /// nil when libcrypto refuses (no HMAC or SHA-256 in its providers): callers fall back.
    init?(key: [UInt8]) {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
        defer { EVP_MAC_free(mac) }
        guard let ctx = EVP_MAC_CTX_new(mac) else { return nil }
        // An OSSL_PARAM keeps the pointers it is made with, read later by EVP_MAC_init: both
        // texts are static. (A String argument's C form lives only during the call it is passed
        // to: "digest" given so was freed before EVP_MAC_init looked it up.)
        let params = [OSSL_PARAM_construct_utf8_string(Self.digestKey.cString, Self.sha256.mutableCString, 0), OSSL_PARAM_construct_end()]
        let ok = key.withUnsafeBufferPointer { k in params.withUnsafeBufferPointer { EVP_MAC_init(ctx, k.baseAddress, k.count, $0.baseAddress) } }
        guard ok == 1 else {
            EVP_MAC_CTX_free(ctx)
            return nil
        }
        template = ctx
    }

    deinit {
        if let ctx = OpaquePointer(bitPattern: spare.load(ordering: .acquiring)) { EVP_MAC_CTX_free(ctx) }
        for ctx in idle.withLock({ $0 }) { EVP_MAC_CTX_free(ctx.pointer) }
        EVP_MAC_CTX_free(template)
    }

    /// The 32-byte MAC of `message` written to `out` (at least 32 bytes); false if libcrypto failed.
    func mac(_ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        let template = Context(pointer: self.template)
        guard out.count >= 32,
              let ctx = OpaquePointer(bitPattern: spare.exchange(0, ordering: .acquiring))
                ?? idle.withLock({ list in list.popLast() ?? EVP_MAC_CTX_dup(template.pointer).map(Context.init) })?.pointer
        else { return false }
        var n = 0
        let ok = EVP_MAC_init(ctx, nil, 0, nil) == 1
            && EVP_MAC_update(ctx, message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
            && EVP_MAC_final(ctx, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &n, out.count) == 1
            && n == 32
        if spare.compareExchange(expected: 0, desired: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(ctx))), ordering: .releasing).exchanged {
            return ok
        }
        let done = Context(pointer: ctx)
        let extra = idle.withLock { list -> Context? in
            guard list.count < Self.keep else { return done }
            list.append(done)
            return nil
        }
        if let extra { EVP_MAC_CTX_free(extra.pointer) }
        return ok
    }
}

private extension StaticString {
    /// The text's bytes where the binary keeps them (NUL-terminated, never freed).
    var cString: UnsafePointer<CChar> { UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self) }
    /// The same, for a C parameter typed `char *` that only reads it.
    var mutableCString: UnsafeMutablePointer<CChar> { UnsafeMutablePointer(mutating: cString) }
}
