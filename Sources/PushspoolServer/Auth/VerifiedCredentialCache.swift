import PushspoolKit
import CCrypto
import Synchronization

/// Passwords that `crypt_r` verified lately, so that bcrypt's deliberate cost (milliseconds per
/// check) is paid once a minute per user instead of once per request.
///
/// Entries are keyed by HMAC-SHA-256(user + NUL + password) under a key drawn at random for this
/// process: the password itself is never kept, and a dump of the cache cannot be tested against
/// guesses without that key. Each entry remembers the stored hash it matched, so a changed
/// password (a new hash in the users file) misses the cache at once. Only successes go in: a
/// wrong password always costs a real check.
final class VerifiedCredentialCache: Sendable {
    struct Key: Hashable, Sendable {
        var a, b, c, d: UInt64
    }

    private struct Entry {
        var hash: String
        var expires: Double
    }

    let lifetime: Double
    let capacity: Int
    private let secret: [UInt8]
    private let entries = Mutex<[Key: Entry]>([:])

    init(lifetime: Double = 60, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
        var secret = [UInt8](repeating: 0, count: 32)
        if RAND_bytes(&secret, 32) != 1 {
            // Only reachable if the system's random source fails; any fresh key still hides passwords.
            var g = SystemRandomNumberGenerator()
            for i in secret.indices { secret[i] = UInt8.random(in: .min ... .max, using: &g) }
        }
        self.secret = secret
    }

    func key(user: String, password: [UInt8]) -> Key {
        let mac = HMAC256.mac(key: secret, message: Array(user.utf8) + [0] + password)
        func word(_ i: Int) -> UInt64 { mac[(i * 8)..<(i * 8 + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        return Key(a: word(0), b: word(1), c: word(2), d: word(3))
    }

    /// Whether `key` was verified against `hash` less than `lifetime` ago.
    func contains(_ key: Key, hash: String, now: Double) -> Bool {
        entries.withLock { map in
            guard let e = map[key] else { return false }
            return e.expires > now && e.hash == hash
        }
    }

    func insert(_ key: Key, hash: String, now: Double) {
        entries.withLock { map in
            if map.count >= capacity && map[key] == nil { Self.evict(&map, now: now, capacity: capacity) }
            map[key] = Entry(hash: hash, expires: now + lifetime)
        }
    }

    var count: Int { entries.withLock { $0.count } }

    /// Drops the expired entries, then, if that freed too little, the ones closest to expiry,
    /// down to 90% of the capacity: a sort once per tenth of the capacity, not per insert.
    private static func evict(_ map: inout [Key: Entry], now: Double, capacity: Int) {
        map = map.filter { $0.value.expires > now }
        let target = capacity * 9 / 10
        guard map.count > target else { return }
        let keep = map.sorted { $0.value.expires > $1.value.expires }.prefix(target)
        map = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }
}
