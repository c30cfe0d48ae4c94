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

/// One cache of credentials per key (e.g. `apns-<team>-<kid>`), shared by every connection and
/// worker of this process and — through files under the spool's `.state/` (mode 0600, under an
/// advisory lock) — by every pushspool process that shares the spool. The clock is injected so
/// tests can move time.
public final class CredentialCache: Sendable {
    private let directory: URL?
    private let clock: @Sendable () -> Date
    private let memory = Mutex<[String: CachedCredential]>([:])
    /// Serialises renewals in this process (the file lock serialises them across processes).
    private let renewing = Mutex<Void>(())

    /// `directory` nil keeps credentials in memory only.
    public init(directory: URL?, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.directory = directory
        self.clock = clock
    }

    public var now: Date { clock() }

    /// The current credential for `key`, made with `make` only when neither this process nor
    /// another one sharing the spool holds a fresh one.
    public func credential(for key: String, policy: RenewalPolicy,
                           make: () throws -> CachedCredential) throws -> CachedCredential {
        if let c = memory.withLock({ $0[key] }), policy.isFresh(c, now: clock()) { return c }
        return try renewing.withLock { _ in
            if let c = memory.withLock({ $0[key] }), policy.isFresh(c, now: clock()) { return c }
            return try withFileLock(key) {
                if let c = readFile(key), policy.isFresh(c, now: clock()) {
                    memory.withLock { $0[key] = c }
                    return c
                }
                let c = try make()
                writeFile(key, c)
                memory.withLock { $0[key] = c }
                return c
            }
        }
    }

    /// Reports that `token` was refused as stale. It is dropped (here and on disk) unless it is
    /// younger than `policy.minInterval`. Returns whether it was dropped.
    @discardableResult
    public func invalidate(key: String, token: String, policy: RenewalPolicy) -> Bool {
        renewing.withLock { _ in
            let now = clock()
            guard let c = memory.withLock({ $0[key] }) ?? readFile(key), c.token == token else { return true }
            if now.timeIntervalSince(c.issuedAt) < policy.minInterval { return false }
            memory.withLock { _ = $0.removeValue(forKey: key) }
            (try? withFileLock(key) {
                if let onDisk = readFile(key), onDisk.token == token, let url = fileURL(key, ext: "json") {
                    try? FileManager.default.removeItem(at: url)
                }
            })
            return true
        }
    }

    // MARK: files

    private func fileURL(_ key: String, ext: String) -> URL? {
        let safe = String(key.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        return directory?.appendingPathComponent("\(safe).\(ext)")
    }

    private func withFileLock<T>(_ key: String, _ body: () throws -> T) throws -> T {
        guard let dir = directory, let lockURL = fileURL(key, ext: "lock") else { return try body() }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let fd = open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return try body() }
        defer { close(fd) }
        _ = flock(fd, LOCK_EX)
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }

    private func readFile(_ key: String) -> CachedCredential? {
        guard let url = fileURL(key, ext: "json"), let data = try? Data(contentsOf: url),
              let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let token = obj["token"] as? String,
              let iat = (obj["issued_at"] as? NSNumber)?.doubleValue,
              let exp = (obj["expires_at"] as? NSNumber)?.doubleValue
        else { return nil }
        return CachedCredential(token: token, issuedAt: Date(timeIntervalSince1970: iat),
                                expiresAt: Date(timeIntervalSince1970: exp))
    }

    private func writeFile(_ key: String, _ c: CachedCredential) {
        guard let url = fileURL(key, ext: "json") else { return }
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
