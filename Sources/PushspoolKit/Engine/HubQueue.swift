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
/// pause). One the policy gave up on stays pending and is tried again `retryAfter` seconds later.
/// The waiting is the spool outbox's (`SpoolOutbox`, shared with the webhooks): at most
/// `concurrency` writes in flight, one installation's never two at once, and one thread that
/// sleeps until the earliest retry is due. Thread-safe.
public final class HubQueue: Sendable {
    private struct State {
        /// Marks whose registry change is not done yet: not taken (`release` makes them ready).
        var held: [String: Int] = [:]
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

    /// `hub/`: a mark per installation in `pending/` (written from a temporary in `hub/` itself).
    private let folder: OutboxFolder
    private var pendingDir: URL { folder.pending }
    /// Marks whose write is in flight: a new mark may be made meanwhile in `pending/`.
    private let sendingDir: URL
    private let writer: InstallationWriter
    private let registry: any DeviceRegistry
    private let log: Log
    private let retryAfter: Double
    private let now: @Sendable () -> Double
    private let state = Mutex(State())
    /// Which marks may be written now, the retries' due times, and the thread that waits for them.
    private let outbox: SpoolOutbox<String>
    private let inFlight = DispatchGroup()

    public init(spool: Spool, writer: InstallationWriter, registry: any DeviceRegistry, log: Log,
                concurrency: Int = 16, retryAfter: Double = 30,
                now: @escaping @Sendable () -> Double = { EngineClock.system.wall().timeIntervalSince1970 }) throws {
        folder = try OutboxFolder(root: spool.root.appendingPathComponent("hub"), keepsFailed: false)
        sendingDir = folder.root.appendingPathComponent("sending")
        try FileManager.default.createDirectory(at: sendingDir, withIntermediateDirectories: true)
        self.writer = writer
        self.registry = registry
        self.log = log
        self.retryAfter = retryAfter
        self.now = now
        outbox = SpoolOutbox(name: "pushspool-hub-queue", maxInFlight: concurrency, now: now)
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
    public func start() {
        // The outbox holds this until its thread ends at `stop`.
        outbox.start(send: { [self] name in take(name) })
        for name in folder.names() { outbox.ready(name) }
    }

    /// Marks installation `id` (of `platform`) as owed to the hub, durably, before the registry
    /// change; `release(id)` once the change is made (or failed). Throws when the mark cannot be
    /// made durable (the registry must then not be changed).
    public func hold(_ id: String, platform: Platform) throws {
        let name = Self.fileName(id)
        state.withLock { $0.held[name, default: 0] += 1 }
        do {
            let record = JSONValue.object([("id", .string(id)), ("platform", .string(platform.rawValue))]).encoded()
            try folder.write(record, name: name, mode: 0o600)
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
        outbox.ready(name)
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
        outbox.stop()
    }

    /// Waits, at most `seconds`, for the writes in flight after `stop` (a hanging hub's are cut
    /// short by the providers' shutdown). True when none is left: the registry may close.
    @discardableResult
    public func waitForWrites(seconds: Double) -> Bool {
        inFlight.wait(timeout: .now() + seconds) == .success
    }

    /// True once `stop` was called: the writer's retries end.
    public var isStopping: Bool { state.withLock { $0.stopped } }

    // MARK: - Writing

    /// Moves the mark to `sending/` (a new mark may then be made meanwhile), reads the device as
    /// the registry has it now, and writes that (or the installation's removal) to the hub. On
    /// the outbox's thread; the write's answer comes on the writer's.
    private func take(_ name: String) {
        // Held: its `release` makes it ready again once the registry change is done.
        if state.withLock({ $0.held[name] != nil }) { return outbox.finished(name) }
        inFlight.enter()
        let pending = pendingDir.appendingPathComponent(name).path, sending = sendingDir.appendingPathComponent(name).path
        guard rename(pending, sending) == 0,
              let data = FileManager.default.contents(atPath: sending),
              case .object(let fields)? = try? JSONParser.parse(Array(data)),
              let id = fields.first(where: { $0.0 == "id" })?.1.stringValue,
              let platform = fields.first(where: { $0.0 == "platform" })?.1.stringValue.flatMap(Platform.init(name:)) else {
            unlink(sending)
            inFlight.leave()
            return outbox.finished(name)
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
            defer { inFlight.leave() }
            if outcome.ok {
                unlink(sending)
                outbox.finished(name)
            } else {
                // A newer mark, if any, replaces this one.
                if access(pending, F_OK) == 0 { unlink(sending) } else { rename(sending, pending) }
                failed(name, outcome.summary)
            }
        }
    }

    /// The mark stays in `pending/` and is written again `retryAfter` seconds from now (at once
    /// when it was marked again meanwhile).
    private func failed(_ name: String, _ why: String) {
        let stopping = state.withLock { s in
            if s.failures.count < 10_000 { s.failures[name] = why }
            return s.stopped
        }
        if !stopping { log.warning("hub: \(why); kept in hub/pending/ and tried again") }
        outbox.retry(name, at: now() + retryAfter)
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
