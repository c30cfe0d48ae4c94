import Dispatch
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
/// It waits at most `seconds` for a lock another process holds, then throws `CredentialLockBusy`.
public protocol CredentialStore: Sendable {
    func withLocked<T>(_ key: String, waitingAtMost seconds: Double,
                       _ body: (inout CachedCredential?) throws -> T) throws -> T
}

/// Another process held a key's lock for longer than the cache waits.
public struct CredentialLockBusy: Error, Sendable, CustomStringConvertible {
    public var key: String
    public var seconds: Double
    public var description: String { "credential \(key): still locked by another process after \(seconds) s" }
}

/// One cache of credentials per key (e.g. `apns-<team>-<kid>`), shared by every connection and
/// worker of this process and — through its `CredentialStore` — by every pushspool process that
/// shares the spool or the PostgreSQL registry. The clock is injected so tests can move time.
///
/// Renewals are per key: a renewal runs with no lock of this process held, so a caller for
/// another key never waits on it (an FCM token fetch of up to 30 s does not hold up an APNs JWT
/// or a hub SAS), and callers needing the same key wait for that one renewal instead of making
/// their own. Across processes the renewal holds the key's store lock while `make` runs: that is
/// what lets every process use the one token it makes rather than each making its own (APNs allows
/// one new token per 20 minutes). Waiting for that lock is bounded by `lockWait`, a bit beyond
/// the longest fetch; past it, and whenever the store fails (the database unreachable), this
/// process makes its own credential and keeps it in memory: sending never stops for want of the
/// shared copy.
public final class CredentialCache: Sendable {
    /// An OAuth token request gives up after 30 s; its holder releases the lock just after.
    public static let defaultLockWait: Double = 35

    private let store: (any CredentialStore)?
    private let clock: @Sendable () -> Date
    private let lockWait: Double
    private let state = Mutex(State())

    private struct State {
        var credentials: [String: CachedCredential] = [:]
        var renewals: [String: Renewal] = [:]
    }

    /// `directory` nil keeps credentials in memory only.
    public convenience init(directory: URL?, clock: @escaping @Sendable () -> Date = { Date() },
                            lockWait: Double = CredentialCache.defaultLockWait) {
        self.init(store: directory.map { FileCredentialStore(directory: $0) }, clock: clock, lockWait: lockWait)
    }

    /// `store` nil keeps credentials in memory only. `lockWait`: how long to wait for another
    /// process's lock on a key (this process's own renewal of it: twice that, as the renewal may
    /// have waited that long itself before its fetch).
    public init(store: (any CredentialStore)?, clock: @escaping @Sendable () -> Date = { Date() },
                lockWait: Double = CredentialCache.defaultLockWait) {
        self.store = store
        self.clock = clock
        self.lockWait = lockWait
    }

    public var now: Date { clock() }

    /// `make` failed: its error, told apart from the store's.
    private struct MakeFailed: Error { var error: any Error }

    /// The current credential for `key`, made with `make` only when neither this process nor
    /// another one sharing the store holds a fresh one. A failure of `make` is thrown to every
    /// caller that waited for it; the next call tries again.
    public func credential(for key: String, policy: RenewalPolicy,
                           make: () throws -> CachedCredential) throws -> CachedCredential {
        enum Role { case held(CachedCredential), waiting(Renewal), renewing(Renewal) }
        let now = clock()
        let role = state.withLock { s -> Role in
            if let c = s.credentials[key], policy.isFresh(c, now: now) { return .held(c) }
            if let renewal = s.renewals[key] { return .waiting(renewal) }
            let renewal = Renewal()
            s.renewals[key] = renewal
            return .renewing(renewal)
        }
        switch role {
        case .held(let c):
            return c
        case .waiting(let renewal):
            if let outcome = renewal.outcome(waitingAtMost: 2 * lockWait) { return try outcome.get() }
            // Stuck past any fetch's bound (a store that hangs): make one here, as when the store fails.
            let c = try make()
            state.withLock { $0.credentials[key] = c }
            return c
        case .renewing(let renewal):
            let outcome = Result { try renew(key, policy: policy, make: make) }
            state.withLock { s in
                if case .success(let c) = outcome { s.credentials[key] = c }
                s.renewals[key] = nil
            }
            renewal.finish(outcome)
            return try outcome.get()
        }
    }

    /// The stored credential if it is fresh, else a new one stored for the other processes.
    private func renew(_ key: String, policy: RenewalPolicy,
                       make: () throws -> CachedCredential) throws -> CachedCredential {
        guard let store else { return try make() }
        do {
            return try store.withLocked(key, waitingAtMost: lockWait) { stored -> CachedCredential in
                if let c = stored, policy.isFresh(c, now: clock()) { return c }
                do { stored = try make() } catch { throw MakeFailed(error: error) }
                return stored!
            }
        } catch let failure as MakeFailed {
            throw failure.error
        } catch {
            // The store is unreachable or the key stayed locked: this process makes its own.
            return try make()
        }
    }

    /// Reports that `token` was refused as stale. It is dropped (here and in the store) unless it
    /// is younger than `policy.minInterval`. Returns whether it was dropped. Like a renewal, it
    /// waits only for the key's own store lock, and at most `lockWait` (past it: dropped here only).
    @discardableResult
    public func invalidate(key: String, token: String, policy: RenewalPolicy) -> Bool {
        let now = clock()
        if let c = state.withLock({ $0.credentials[key] }), c.token == token,
           now.timeIntervalSince(c.issuedAt) < policy.minInterval {
            return false
        }
        let dropped = (try? store?.withLocked(key, waitingAtMost: lockWait) { stored -> Bool in
            guard let c = stored, c.token == token else { return true }
            if now.timeIntervalSince(c.issuedAt) < policy.minInterval { return false }
            stored = nil
            return true
        }) ?? true
        guard dropped else { return false }
        state.withLock { s in if s.credentials[key]?.token == token { s.credentials.removeValue(forKey: key) } }
        return true
    }
}

/// One renewal of a key in flight in this process: the caller that started it runs it, callers
/// needing the same key meanwhile wait for its outcome.
private final class Renewal: Sendable {
    private let done = DispatchGroup()
    private let result = Mutex<Result<CachedCredential, any Error>?>(nil)

    init() { done.enter() }

    func finish(_ outcome: Result<CachedCredential, any Error>) {
        result.withLock { $0 = outcome }
        done.leave()
    }

    /// nil when it is still running after `seconds`.
    func outcome(waitingAtMost seconds: Double) -> Result<CachedCredential, any Error>? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return result.withLock { $0 }
    }
}

/// Credentials in files under a folder (the spool's `.state/`): `<key>.json` (mode 0600) under
/// an advisory lock on `<key>.lock`, for every process sharing the spool.
public struct FileCredentialStore: CredentialStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    public func withLocked<T>(_ key: String, waitingAtMost seconds: Double,
                              _ body: (inout CachedCredential?) throws -> T) throws -> T {
        try withFileLock(key, waitingAtMost: seconds) {
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

    private func withFileLock<T>(_ key: String, waitingAtMost seconds: Double, _ body: () throws -> T) throws -> T {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let path = fileURL(key, ext: "lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return try body() }
        // Closed after the lock is let go: that close is what a waiter in another process wakes on.
        defer { close(fd) }
        guard Self.lock(fd, path: path, waitingAtMost: seconds) else { throw CredentialLockBusy(key: key, seconds: seconds) }
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }

    /// `flock` without blocking, tried again each time the lock file at `path` is closed (its
    /// holder lets go, then closes it: `FileCloseWatch`) until `seconds` have passed: false if
    /// another process still holds it then. (`flock` itself cannot block for a bounded time.)
    /// Any other failure (a file system without locks, no inotify to wait with) lets the caller
    /// go on unlocked, as it always has: the credential file is replaced whole, never torn, and
    /// the worst is a credential fetched twice.
    static func lock(_ fd: Int32, path: String, waitingAtMost seconds: Double) -> Bool {
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
        guard errno == EWOULDBLOCK || errno == EINTR else { return true }
        let deadline = DispatchTime.now() + seconds
        // Watching before trying again: a close between the try and the wait is not missed.
        guard let closes = FileCloseWatch(path: path) else { return true }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { return true }
            guard closes.wait(until: deadline) else { return false }
        }
        return true
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
