import PushspoolKit
import CCrypt
import Foundation
import Synchronization

/// Verifies passwords with libcrypt's `crypt_r`, which returns the stored hash again exactly when
/// the password matches (bcrypt `$2y$`/`$2b$`/`$2a$`, SHA-512-crypt `$6$`).
///
/// `crypt_r` needs a `struct crypt_data` of about 32 KiB per concurrent call: too big for the
/// stacks of a server's threads, and too big to allocate per request. A small pool keeps a few
/// on the heap; each is wiped after use, so no password-derived state outlives its check.
final class CryptPasswordVerifier: PasswordVerifier {
    /// A heap `crypt_data` handed from one thread to another through the pool's lock.
    private struct Scratch: @unchecked Sendable {
        let data: UnsafeMutablePointer<crypt_data>
    }

    private let idle = Mutex<[Scratch]>([])
    /// More than this many idle buffers are freed instead of kept (the server's thread pool is small).
    private let keepIdle = 16

    init() {}

    deinit {
        idle.withLock { pool in
            for s in pool { s.data.deallocate() }
            pool.removeAll()
        }
    }

    func verify(password: [UInt8], against hash: String) -> Bool {
        guard !password.contains(0) else { return false }
        let scratch = idle.withLock { $0.popLast() } ?? Self.allocate()
        defer {
            // Zeroed both to wipe password-derived state and because crypt_r wants a zeroed
            // `initialized` field before a buffer's first use.
            memset(scratch.data, 0, MemoryLayout<crypt_data>.size)
            let freed: Scratch? = idle.withLock { pool in
                if pool.count < keepIdle { pool.append(scratch); return nil }
                return scratch
            }
            freed?.data.deallocate()
        }
        let phrase = password.map { CChar(bitPattern: $0) } + [0]
        guard let result = crypt_r(phrase, hash, scratch.data) else { return false }
        // A failure is "*0"/"*1" or NULL, never equal to a well-formed stored hash.
        let computed = UnsafeRawBufferPointer(start: result, count: strlen(result))
        return ConstantTime.equal(computed, hash.utf8)
    }

    private static func allocate() -> Scratch {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        memset(data, 0, MemoryLayout<crypt_data>.size)
        return Scratch(data: data)
    }
}
