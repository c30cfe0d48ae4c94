import Dispatch
import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// The cache's locking, on real threads and real files: a renewal holds up only callers of its own
/// key, they share its one `make`, and a lock held elsewhere is waited for only up to the bound.
struct CredentialCacheTests {
    struct Refused: Error {}

    static func credential(_ token: String) -> CachedCredential {
        CachedCredential(token: token, issuedAt: Date(), expiresAt: Date().addingTimeInterval(3600))
    }

    /// Runs `body` on a thread of its own; the semaphore is signalled when it returns.
    static func spawn(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread { body(); done.signal() }.start()
        return done
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now()
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    @Test func aSlowRenewalOfOneKeyDoesNotHoldUpAnother() throws {
        let dir = TempDir()
        let cache = CredentialCache(directory: dir.url)
        let started = DispatchSemaphore(value: 0), fetched = DispatchSemaphore(value: 0)
        let a = Self.spawn {
            _ = try? cache.credential(for: "A", policy: RenewalPolicy()) {
                started.signal()
                fetched.wait()   // an OAuth fetch on a slow network: it ends once B has its token
                return Self.credential("a")
            }
        }
        started.wait()
        let b = Mutex<CachedCredential?>(nil)
        let bDone = Self.spawn { b.withLock { $0 = try? cache.credential(for: "B", policy: RenewalPolicy()) { Self.credential("b") } } }
        #expect(bDone.wait(timeout: .now() + 30) == .success, "B waited on A's renewal")
        #expect(b.withLock { $0?.token } == "b")
        fetched.signal()
        a.wait()
        #expect(try cache.credential(for: "A", policy: RenewalPolicy()) { Self.credential("again") }.token == "a")
    }

    /// Eight callers of one key while it renews: the first makes it, the others wait for that
    /// renewal; all get its token. With `fail`, all get its error.
    func eightCallers(_ cache: CredentialCache, fail: Bool) -> (made: Int, results: [Result<String, any Error>]) {
        let made = Atomic<Int>(0)
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let results = Mutex<[Result<String, any Error>]>([])
        @Sendable func call() {
            let r = Result {
                try cache.credential(for: "k", policy: RenewalPolicy()) {
                    made.add(1, ordering: .relaxed)
                    started.signal()
                    release.wait()
                    if fail { throw Refused() }
                    return Self.credential("token-1")
                }.token
            }
            results.withLock { $0.append(r) }
        }
        var threads = [Self.spawn(call)]
        started.wait()
        threads += (1..<8).map { _ in Self.spawn(call) }
        Thread.sleep(forTimeInterval: 0.3)   // the seven reach the cache and wait
        release.signal()
        threads.forEach { $0.wait() }
        return (made.load(ordering: .relaxed), results.withLock { $0 })
    }

    @Test func callersOfAKeyBeingRenewedShareItsOneMake() throws {
        let dir = TempDir()
        let (made, results) = eightCallers(CredentialCache(directory: dir.url), fail: false)
        #expect(made == 1)
        #expect(results.count == 8)
        #expect(results.allSatisfy { (try? $0.get()) == "token-1" })
    }

    @Test func aFailedRenewalReachesEveryWaiterAndTheNextCallTriesAgain() throws {
        let dir = TempDir()
        let cache = CredentialCache(directory: dir.url)
        let (made, results) = eightCallers(cache, fail: true)
        #expect(made == 1)
        #expect(results.count == 8)
        #expect(results.allSatisfy { if case .failure(let e) = $0 { e is Refused } else { false } })
        #expect(try cache.credential(for: "k", policy: RenewalPolicy()) { Self.credential("token-2") }.token == "token-2")
    }

    /// `flock` locks belong to an open file description, so a second `open()` of the lock file in
    /// this process stands in for another process holding it (stuck in its own fetch).
    @Test func aLockHeldByAnotherProcessIsWaitedForOnlyUpToTheBound() throws {
        let dir = TempDir()
        let fd = open(dir.path("k.lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        let cache = CredentialCache(directory: dir.url, lockWait: 0.5)
        var c: CachedCredential?
        let waited = try Self.seconds { c = try cache.credential(for: "k", policy: RenewalPolicy()) { Self.credential("own") } }
        #expect(c?.token == "own", "made in memory when the lock stays held")
        #expect(waited >= 0.45 && waited < 3, "waited \(waited) s")
        #expect(dir.read("k.json") == nil, "not written without the lock")
        // An invalidation waits no longer, and drops the token here.
        let invalidating = Self.seconds { #expect(cache.invalidate(key: "k", token: "own", policy: RenewalPolicy())) }
        #expect(invalidating < 3)

        close(fd)   // the other process is done: the next renewal is shared again
        let shared = try CredentialCache(directory: dir.url, lockWait: 0.5).credential(for: "k", policy: RenewalPolicy()) {
            Self.credential("shared")
        }
        #expect(shared.token == "shared" && dir.read("k.json")?.contains("shared") == true)
    }

    /// A waiter wakes on the holder's close of the lock file, not on a timer: with a bound of a
    /// minute, the lock is still taken (the credential written to the shared file) once the
    /// other holder lets go.
    @Test func aLockLetGoIsTakenAtTheHoldersClose() throws {
        let dir = TempDir()
        let fd = open(dir.path("k.lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        let cache = CredentialCache(directory: dir.url, lockWait: 60)
        let result = Mutex<Result<String, any Error>?>(nil)
        let waiter = Self.spawn {
            let r = Result { try cache.credential(for: "k", policy: RenewalPolicy()) { Self.credential("after-close") }.token }
            result.withLock { $0 = r }
        }
        _ = flock(fd, LOCK_UN)
        close(fd)
        waiter.wait()
        #expect(try result.withLock { $0 }?.get() == "after-close")
        #expect(dir.read("k.json")?.contains("after-close") == true, "written under the lock")
    }

    @Test func aCloseWatchSeesACloseAndOnlyThen() throws {
        let dir = TempDir()
        let path = dir.path("x.lock")
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let watch = try #require(FileCloseWatch(path: path))
        #expect(!watch.wait(until: .now()), "nothing closed yet")
        let other = open(path, O_RDWR | O_CLOEXEC)
        try #require(other >= 0)
        close(other)
        #expect(watch.wait(until: .now() + 60), "the close was seen")
        #expect(!watch.wait(until: .now()), "and counted once")
    }
}
