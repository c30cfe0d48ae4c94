import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A short-lived credential derived at run time: an APNs provider JWT, an OAuth access token, a SAS.
public struct CachedCredential: Sendable, Equatable {
    public var token: String
    public var issuedAt: Date
    public var expiresAt: Date

    public init(token: String, issuedAt: Date, expiresAt: Date) {
        self.token = token
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// When a cached credential is replaced.
public struct RenewalPolicy: Sendable {
    /// Renew once the credential is this old (APNs: 50 min), whatever its expiry.
    public var renewAfter: Double?
    /// Renew this long before `expiresAt` (OAuth: a few minutes).
    public var expirySkew: Double
    /// Never replace a credential younger than this, even after an auth error (APNs: 20 min,
    /// or Apple answers `TooManyProviderTokenUpdates`).
    public var minInterval: Double

    public init(renewAfter: Double? = nil, expirySkew: Double = 300, minInterval: Double = 0) {
        self.renewAfter = renewAfter
        self.expirySkew = expirySkew
        self.minInterval = minInterval
    }

    func isFresh(_ c: CachedCredential, now: Date) -> Bool {
        if now >= c.expiresAt.addingTimeInterval(-expirySkew) { return false }
        if let renewAfter, now.timeIntervalSince(c.issuedAt) >= renewAfter { return false }
        return true
    }
}

/// Where credentials are shared between processes: files under the spool's `.state/` (one host,
/// `FileCredentialStore`) or the PostgreSQL registry (several hosts, `PostgresCredentialStore`).
/// `withLocked` runs `body` holding the key's cross-process lock, with the stored credential (nil
/// when none); whatever `body` leaves in it is stored (nil: removed) before the lock is released.
public protocol CredentialStore: Sendable {
    func withLocked<T>(_ key: String, _ body: (inout CachedCredential?) throws -> T) throws -> T
}

/// One cache of credentials per key (e.g. `apns-<team>-<kid>`), shared by every connection and
/// worker of this process and — through its `CredentialStore` — by every pushspool process that
/// shares the spool or the PostgreSQL registry. The clock is injected so tests can move time.
/// Should the store fail (the database unreachable), credentials are made and kept in memory
/// only until it answers again: sending never stops for want of the shared copy.
public final class CredentialCache: Sendable {
    private let store: (any CredentialStore)?
    private let clock: @Sendable () -> Date
    private let memory = Mutex<[String: CachedCredential]>([:])
    /// Serialises renewals in this process (the store's lock serialises them across processes).
    private let renewing = Mutex<Void>(())

    /// `directory` nil keeps credentials in memory only.
    public convenience init(directory: URL?, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.init(store: directory.map { FileCredentialStore(directory: $0) }, clock: clock)
    }

    /// `store` nil keeps credentials in memory only.
    public init(store: (any CredentialStore)?, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.clock = clock
    }

    public var now: Date { clock() }

    /// `make` failed: its error, told apart from the store's.
    private struct MakeFailed: Error { var error: any Error }

    /// The current credential for `key`, made with `make` only when neither this process nor
    /// another one sharing the store holds a fresh one.
    public func credential(for key: String, policy: RenewalPolicy,
                           make: () throws -> CachedCredential) throws -> CachedCredential {
        if let c = memory.withLock({ $0[key] }), policy.isFresh(c, now: clock()) { return c }
        return try renewing.withLock { _ in
            if let c = memory.withLock({ $0[key] }), policy.isFresh(c, now: clock()) { return c }
            if let store {
                do {
                    let c = try store.withLocked(key) { stored -> CachedCredential in
                        if let c = stored, policy.isFresh(c, now: clock()) { return c }
                        do { stored = try make() } catch { throw MakeFailed(error: error) }
                        return stored!
                    }
                    memory.withLock { $0[key] = c }
                    return c
                } catch let failure as MakeFailed {
                    throw failure.error
                } catch {
                    // The store is unreachable: this process makes its own until it is back.
                }
            }
            let c = try make()
            memory.withLock { $0[key] = c }
            return c
        }
    }

    /// Reports that `token` was refused as stale. It is dropped (here and in the store) unless it
    /// is younger than `policy.minInterval`. Returns whether it was dropped.
    @discardableResult
    public func invalidate(key: String, token: String, policy: RenewalPolicy) -> Bool {
        renewing.withLock { _ in
            let now = clock()
            if let c = memory.withLock({ $0[key] }), c.token == token, now.timeIntervalSince(c.issuedAt) < policy.minInterval {
                return false
            }
            let dropped = (try? store?.withLocked(key) { stored -> Bool in
                guard let c = stored, c.token == token else { return true }
                if now.timeIntervalSince(c.issuedAt) < policy.minInterval { return false }
                stored = nil
                return true
            }) ?? true
            guard dropped else { return false }
            memory.withLock { m in if m[key]?.token == token { m.removeValue(forKey: key) } }
            return true
        }
    }
}

/// Credentials in files under a folder (the spool's `.state/`): `<key>.json` (mode 0600) under
/// an advisory lock on `<key>.lock`, for every process sharing the spool.
public struct FileCredentialStore: CredentialStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    public func withLocked<T>(_ key: String, _ body: (inout CachedCredential?) throws -> T) throws -> T {
        try withFileLock(key) {
            let before = readFile(key)
            var value = before
            let result = try body(&value)
            if value != before {
                if let value {
                    writeFile(key, value)
                } else {
                    try? FileManager.default.removeItem(at: fileURL(key, ext: "json"))
                }
            }
            return result
        }
    }

    private func fileURL(_ key: String, ext: String) -> URL {
        let safe = String(key.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        return directory.appendingPathComponent("\(safe).\(ext)")
    }

    private func withFileLock<T>(_ key: String, _ body: () throws -> T) throws -> T {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let fd = open(fileURL(key, ext: "lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return try body() }
        defer { close(fd) }
        _ = flock(fd, LOCK_EX)
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }

    private func readFile(_ key: String) -> CachedCredential? {
        guard let data = try? Data(contentsOf: fileURL(key, ext: "json")),
              let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let token = obj["token"] as? String,
              let iat = (obj["issued_at"] as? NSNumber)?.doubleValue,
              let exp = (obj["expires_at"] as? NSNumber)?.doubleValue
        else { return nil }
        return CachedCredential(token: token, issuedAt: Date(timeIntervalSince1970: iat),
                                expiresAt: Date(timeIntervalSince1970: exp))
    }

    private func writeFile(_ key: String, _ c: CachedCredential) {
        let url = fileURL(key, ext: "json")
        let doc = JSONValue.object([
            ("token", .string(c.token)),
            ("issued_at", .double(c.issuedAt.timeIntervalSince1970)),
            ("expires_at", .double(c.expiresAt.timeIntervalSince1970)),
        ])
        let tmp = url.appendingPathExtension("tmp\(getpid())")
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = doc.encoded()
        let ok = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
        close(fd)
        if ok { _ = rename(tmp.path, url.path) } else { unlink(tmp.path) }
    }
}
