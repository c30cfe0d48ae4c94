import Dispatch
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The hub installation writes `serve` owes, kept durably in the spool (`hub/pending/`) and
/// written in the background, so that a slow or failing hub never holds up a registration: the
/// local registry write is the record and answers the request; the hub gets the device as the
/// registry has it when its turn comes (`pushspool hub sync` does the same for every device).
///
/// Order of a registration: the installation is marked pending (fsynced), the registry is
/// changed, then `release` lets the writer go. A crash in between leaves a mark for a change
/// that may not have happened; writing the registry's state for it again is harmless. A mark is
/// removed only when the hub confirmed the write of the state read after the mark was taken.
///
/// Each write goes through `InstallationWriter` (the pool's `RetryPolicy`, the hub's rate cap and
/// pause). One the policy gave up on stays pending and is tried again after `retryAfter` seconds
/// (one timer, armed only then). At most `concurrency` writes are in flight. Thread-safe.
public final class HubQueue: Sendable {
    private struct State {
        /// Marks being written or whose registry change is not done yet: not taken.
        var held: [String: Int] = [:]
        var running: Set<String> = []
        /// Marked again while its write was running: taken once more afterwards.
        var again: Set<String> = []
        var waiting: [String] = []
        var queued: Set<String> = []
        var retryArmed = false
        var stopped = false
        /// The last failure per installation, for `GET /v1/devices/{id}` (bounded).
        var failures: [String: String] = [:]
    }

    public enum Status: Sendable, Equatable {
        /// The hub has the registry's last change of this device.
        case written
        /// Not yet written (queued, being written, or retrying after `lastError`).
        case pending(lastError: String?)
    }

    private let pendingDir: URL
    private let sendingDir: URL
    private let writer: InstallationWriter
    private let registry: any DeviceRegistry
    private let log: Log
    private let concurrency: Int
    private let retryAfter: Double
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "pushspool.hub-queue")
    private let inFlight = DispatchGroup()

    public init(spool: Spool, writer: InstallationWriter, registry: any DeviceRegistry, log: Log,
                concurrency: Int = 16, retryAfter: Double = 30) throws {
        let root = spool.root.appendingPathComponent("hub")
        pendingDir = root.appendingPathComponent("pending")
        sendingDir = root.appendingPathComponent("sending")
        for dir in [pendingDir, sendingDir] {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        }
        self.writer = writer
        self.registry = registry
        self.log = log
        self.concurrency = max(1, concurrency)
        self.retryAfter = retryAfter
        // A write cut short by a stop or a crash is owed again.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: sendingDir.path)) ?? [] {
            let pending = pendingDir.appendingPathComponent(name).path
            if access(pending, F_OK) == 0 {
                unlink(sendingDir.appendingPathComponent(name).path)
            } else {
                rename(sendingDir.appendingPathComponent(name).path, pending)
            }
        }
    }

    public var platforms: Set<Platform> { writer.platforms }

    public func serves(_ platform: Platform) -> Bool { writer.serves(platform) }

    /// Starts writing what is pending from before (a previous run's marks).
    public func start() { queue.async { self.scan() } }

    /// Marks installation `id` (of `platform`) as owed to the hub, durably, before the registry
    /// change; `release(id)` once the change is made (or failed). Throws when the mark cannot be
    /// made durable (the registry must then not be changed).
    public func hold(_ id: String, platform: Platform) throws {
        let name = Self.fileName(id)
        state.withLock { $0.held[name, default: 0] += 1 }
        do {
            let record = JSONValue.object([("id", .string(id)), ("platform", .string(platform.rawValue))]).encoded()
            let mark = pendingDir.appendingPathComponent(name)
            // The temporary beside pending/, not in it: the scan of pending/ never sees it.
            try DurableFile().write(record, to: mark, temporary: DurableFile.temporary(for: mark, in: pendingDir.deletingLastPathComponent()), mode: 0o600)
        } catch {
            release(id)
            throw error
        }
    }

    /// The registry change after `hold` is done: the write may go.
    public func release(_ id: String) {
        let name = Self.fileName(id)
        state.withLock { s in
            if let n = s.held[name], n > 1 { s.held[name] = n - 1 } else { s.held[name] = nil }
            s.failures[name] = nil
        }
        queue.async { self.enqueue(name) }
    }

    /// Whether the hub has the registry's last change of `id` yet.
    public func status(of id: String) -> Status {
        let name = Self.fileName(id)
        let owed = access(pendingDir.appendingPathComponent(name).path, F_OK) == 0
            || access(sendingDir.appendingPathComponent(name).path, F_OK) == 0
        return owed ? .pending(lastError: state.withLock { $0.failures[name] }) : .written
    }

    /// Takes no more writes; what is not written stays pending for the next run.
    public func stop() {
        state.withLock { $0.stopped = true }
    }

    /// Waits, at most `seconds`, for the writes in flight after `stop` (a hanging hub's are cut
    /// short by the providers' shutdown). True when none is left: the registry may close.
    @discardableResult
    public func waitForWrites(seconds: Double) -> Bool {
        inFlight.wait(timeout: .now() + seconds) == .success
    }

    /// True once `stop` was called: the writer's retries end.
    public var isStopping: Bool { state.withLock { $0.stopped } }

    // MARK: - On `queue`

    private func scan() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: pendingDir.path)) ?? []
        for name in names.sorted() where !name.hasPrefix(".") { enqueue(name) }
    }

    private func enqueue(_ name: String) {
        state.withLock { s in
            if s.running.contains(name) {
                s.again.insert(name)
            } else if !s.queued.contains(name) {
                s.queued.insert(name)
                s.waiting.append(name)
            }
        }
        pump()
    }

    private func pump() {
        while let name = state.withLock({ s -> String? in
            guard !s.stopped, s.running.count < concurrency else { return nil }
            // Held ones wait for their registry change (their `release` enqueues them again).
            guard let i = s.waiting.firstIndex(where: { s.held[$0] == nil }) else { return nil }
            let name = s.waiting.remove(at: i)
            s.queued.remove(name)
            s.running.insert(name)
            return name
        }) {
            take(name)
        }
    }

    /// Moves the mark to `sending/` (a new mark may then be made meanwhile), reads the device as
    /// the registry has it now, and writes that (or the installation's removal) to the hub.
    private func take(_ name: String) {
        inFlight.enter()
        let pending = pendingDir.appendingPathComponent(name).path, sending = sendingDir.appendingPathComponent(name).path
        guard rename(pending, sending) == 0,
              let data = FileManager.default.contents(atPath: sending),
              case .object(let fields)? = try? JSONParser.parse(Array(data)),
              let id = fields.first(where: { $0.0 == "id" })?.1.stringValue,
              let platform = fields.first(where: { $0.0 == "platform" })?.1.stringValue.flatMap(Platform.init(name:)) else {
            unlink(sending)
            inFlight.leave()
            return finished(name)
        }
        let device: Device?
        do {
            device = try registry.device(id: id)
        } catch {
            // The registry is down: the mark stays, tried again later.
            rename(sending, pending)
            inFlight.leave()
            return failed(name, "the registry did not answer: \(RegistryError.detail(error))")
        }
        let change: InstallationChange, hubPlatform: Platform
        if let device, writer.serves(device.platform) {
            (change, hubPlatform) = (.put(device), device.platform)
        } else {
            (change, hubPlatform) = (.delete(id: id), writer.serves(platform) ? platform : (writer.platforms.min() ?? platform))
        }
        writer.write(change, platform: hubPlatform) { [self] outcome in
            queue.async { [self] in
                defer { inFlight.leave() }
                if outcome.ok {
                    unlink(sending)
                    finished(name)
                } else {
                    // A newer mark, if any, replaces this one.
                    if access(pending, F_OK) == 0 { unlink(sending) } else { rename(sending, pending) }
                    failed(name, outcome.summary)
                }
            }
        }
    }

    private func finished(_ name: String) {
        let again = state.withLock { s in
            s.running.remove(name)
            return s.again.remove(name) != nil
        }
        if again { enqueue(name) } else { pump() }
    }

    private func failed(_ name: String, _ why: String) {
        let (again, arm) = state.withLock { s -> (Bool, Bool) in
            s.running.remove(name)
            if s.failures.count < 10_000 { s.failures[name] = why }
            let arm = !s.retryArmed && !s.stopped
            if arm { s.retryArmed = true }
            return (s.again.remove(name) != nil, arm)
        }
        if !isStopping { log.warning("hub: \(why); kept in hub/pending/ and tried again") }
        if arm {
            queue.asyncAfter(deadline: .now() + retryAfter) { [self] in
                state.withLock { $0.retryArmed = false }
                scan()
            }
        }
        if again { enqueue(name) } else { pump() }
    }

    /// A file name for an installation id: the id itself when it is plain, else a digest of it
    /// (the id is inside the file).
    static func fileName(_ id: String) -> String {
        let plain = id.utf8.count <= 200 && !id.hasPrefix(".")
            && id.utf8.allSatisfy { b in (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E }
        if plain { return id }
        return "h-" + SHA256.digest(Array(id.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
