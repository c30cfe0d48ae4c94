import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The zero-credential provider: "delivers" by appending each rendered notification as one JSON
/// line to `<outbox>/<platform>.jsonl`, so a user sees exactly what would go to each service.
public final class SandboxProvider: PushProvider {
    public let name = "sandbox"
    private let outbox: URL
    /// One descriptor per platform file, opened O_APPEND: every line lands whole at the end,
    /// whoever else (another dispatcher on the spool) appends to the same file.
    private let files = Mutex<[Platform: Int32]>([:])
    /// Message ids: unique per process run (a random prefix) and per send (a counter).
    private let idPrefix = "sandbox-" + UUID().uuidString.lowercased().prefix(8) + "-"
    private let sent = Atomic<Int>(0)

    /// The outbox folder is created on the first delivery (`config --check` creates nothing).
    public init(outbox: URL) {
        self.outbox = outbox
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        if case .device(let device) = request.recipient, let refusal = Self.refusal(device.platform, handle: device.handle) {
            completion(refusal)
            return
        }
        let line = Self.outboxLine(request, at: Date())
        do {
            let fd = try files.withLock { files in
                if let fd = files[request.platform] { return fd }
                try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o750])
                let path = outbox.appendingPathComponent("\(request.platform.rawValue).jsonl").path
                let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
                guard fd >= 0 else { throw FileIO.Failure(description: "cannot open \(path): \(FileIO.errnoText())") }
                files[request.platform] = fd
                return fd
            }
            // One write per line: O_APPEND makes it land whole at the end of the file.
            try FileIO.writeAll(fd, line)
            let n = sent.add(1, ordering: .relaxed).newValue
            completion(ProviderResult(.delivered, code: "200", providerID: idPrefix + String(n)))
        } catch {
            // A full disk or unwritable outbox is transient from the job's point of view.
            completion(ProviderResult(.retry(after: nil), code: "io", reason: "outbox write failed: \(error)"))
        }
    }

    /// A rehearsal refuses what the real service would, with the outcome its provider gives: a
    /// malformed APNs token is `BadDeviceToken` (the device is pruned), a malformed FCM token the
    /// 400 `INVALID_ARGUMENT` FCM answers (pruned too), a WNS channel that is not an https URL is
    /// never posted to.
    static func refusal(_ platform: Platform, handle: String) -> ProviderResult? {
        guard platform.handleProblem(handle) != nil else { return nil }
        switch platform {
        case .apns: return ProviderResult(.deviceGone(since: nil), code: "local", reason: APNsReason.badDeviceToken.rawValue)
        case .fcm: return ProviderResult(.deviceGone(since: nil), code: "400", reason: "INVALID_ARGUMENT: not a valid FCM registration token")
        case .wns: return ProviderResult(.rejected, code: "host-not-allowed", reason: "channel URI is not an https URL")
        case .web: return ProviderResult(.rejected, code: "invalid-subscription", reason: "not a valid Web Push subscription")
        }
    }

    public func shutdown() {
        files.withLock { files in
            for fd in files.values { FileIO.closeDescriptor(fd) }
            files.removeAll()
        }
    }

    /// One outbox line: job, platform, recipient (device id or hub tags), the native headers and
    /// the payload exactly as the service would receive it (JSON inline, XML as a string).
    static func outboxLine(_ r: SendRequest, at date: Date) -> [UInt8] {
        var w = JSONLineWriter(capacity: 512)
        w.field("job", r.jobID)
        w.field("platform", r.platform.rawValue)
        switch r.recipient {
        case .device(let d): w.field("device", d.id)
        case .hub(let a): w.field("tags", a.hubTags)
        }
        var headers: [(String, JSONValue)] = []
        switch r.notification {
        case .apns(let n):
            headers.append(("apns-push-type", .string(n.pushType)))
            headers.append(("apns-priority", .string(String(n.priority))))
            if let ttl = n.ttlSeconds { headers.append(("apns-expiration", .string(String(Int(date.timeIntervalSince1970) + ttl)))) }
            if let c = n.collapseID { headers.append(("apns-collapse-id", .string(c))) }
            w.field("headers", .object(headers))
            // The rendered payload is JSON already: copied, not parsed and written again.
            w.field("payload", json: n.payload)
        case .fcm(let n):
            w.field("headers", .object(headers))
            w.field("payload", .object([("message", n.message)]))
        case .wns(let n):
            headers.append(("X-WNS-Type", .string(n.type)))
            headers.append(("Content-Type", .string(n.contentType)))
            if let ttl = n.ttlSeconds { headers.append(("X-WNS-TTL", .string(String(ttl)))) }
            w.field("headers", .object(headers))
            w.field("payload", String(decoding: n.body, as: UTF8.self))
        case .web(let n):
            // What the push service would get, before encryption: the body is encrypted per
            // device, so the outbox shows the plaintext and the RFC 8030 headers.
            headers.append(("TTL", .string(String(n.ttlSeconds))))
            headers.append(("Urgency", .string(n.urgency)))
            if let topic = n.topic { headers.append(("Topic", .string(topic))) }
            headers.append(("Content-Encoding", .string("aes128gcm")))
            w.field("headers", .object(headers))
            w.field("payload", json: n.payload)
        }
        w.field("at", Timestamp.rfc3339(date))
        return w.line()
    }
}
