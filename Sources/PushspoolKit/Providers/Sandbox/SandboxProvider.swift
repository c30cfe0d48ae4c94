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
    /// One descriptor per platform file, opened O_APPEND: every write lands whole at the end,
    /// whoever else (another dispatcher on the spool) appends to the same file. Lines held for a
    /// producer's flush wait here, per platform file, with their answers. Writes happen under the
    /// lock, so two flushes never interleave their bytes.
    private struct Files {
        var descriptors: [Platform: Int32] = [:]
        var held: [Platform: Held] = [:]
    }
    private struct Held {
        var bytes: [UInt8] = []
        var answers: [@Sendable (ProviderResult) -> Void] = []

        mutating func add(_ line: [UInt8], _ answer: @escaping @Sendable (ProviderResult) -> Void) {
            bytes += line
            answers.append(answer)
        }
    }
    private let files = Mutex(Files())
    /// Message ids: unique per process run (a random prefix) and per send (a counter).
    private let idPrefix = "sandbox-" + UUID().uuidString.lowercased().prefix(8) + "-"
    private let sent = Atomic<Int>(0)

    /// The outbox folder is created on the first delivery (`config --check` creates nothing).
    public init(outbox: URL) {
        self.outbox = outbox
    }

    /// On a send job's producer thread the line and its answer are held until the producer's
    /// `flush`: a delivery is answered only once its line is written, so the result log never
    /// records one the outbox lacks. Anywhere else the line is written at once.
    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        if case .device(let device) = request.recipient, let refusal = Self.refusal(device.platform, handle: device.handle) {
            completion(refusal)
            return
        }
        let line = Self.outboxLine(request, at: Date())
        if ProducerThread.isCurrent {
            files.withLock { f in
                f.held[request.platform, default: Held()].add(line, completion)
            }
            return
        }
        let failure = files.withLock { f in write(line, platform: request.platform, &f) }
        completion(answer(failure))
    }

    /// Writes every held line, one `write(2)` per platform file, then answers their requests:
    /// delivered, or (a full disk, an unwritable outbox) a transient failure the engine retries.
    public func flush() {
        var answered: [(String?, [@Sendable (ProviderResult) -> Void])] = []
        files.withLock { f in
            guard !f.held.isEmpty else { return }
            let held = f.held
            f.held = [:]
            for (platform, h) in held { answered.append((write(h.bytes, platform: platform, &f), h.answers)) }
        }
        for (failure, answers) in answered {
            for completion in answers { completion(answer(failure)) }
        }
    }

    /// Appends `bytes` to the platform's file (opened, and the outbox created, on first use);
    /// the failure's text, or nil once written.
    private func write(_ bytes: [UInt8], platform: Platform, _ f: inout Files) -> String? {
        do {
            let fd: Int32
            if let open = f.descriptors[platform] {
                fd = open
            } else {
                try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o750])
                let path = outbox.appendingPathComponent("\(platform.rawValue).jsonl").path
                fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
                guard fd >= 0 else { throw FileIO.Failure(description: "cannot open \(path): \(FileIO.errnoText())") }
                f.descriptors[platform] = fd
            }
            try FileIO.writeAll(fd, bytes)
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func answer(_ failure: String?) -> ProviderResult {
        // A full disk or unwritable outbox is transient from the job's point of view.
        if let failure { return ProviderResult(.retry(after: nil), code: "io", reason: "outbox write failed: \(failure)") }
        let n = sent.add(1, ordering: .relaxed).newValue
        return ProviderResult(.delivered, code: "200", providerID: idPrefix + String(n))
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
        case .hms: return ProviderResult(.deviceGone(since: nil), code: "80300007", reason: "not a valid HMS push token")
        case .adm: return ProviderResult(.deviceGone(since: nil), code: "400", reason: "InvalidRegistrationId")
        }
    }

    public func shutdown() {
        flush()
        files.withLock { f in
            for fd in f.descriptors.values { FileIO.closeDescriptor(fd) }
            f.descriptors.removeAll()
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
        case .hub(let a):
            switch a {
            case .fcmTopic(let t): w.field("topic", t)
            case .fcmCondition(let c): w.field("condition", c)
            case .apnsChannel(let id): w.field("channel", id)
            default: w.field("tags", a.hubTags)
            }
        }
        switch r.notification {
        case .apns(let n):
            w.field("headers", members: { h in
                h.member("apns-push-type", n.pushType)
                h.member("apns-priority", String(n.priority))
                if let ttl = n.ttlSeconds { h.member("apns-expiration", String(Int(date.timeIntervalSince1970) + ttl)) }
                if let c = n.collapseID { h.member("apns-collapse-id", c) }
            })
            // The rendered payload is JSON already: copied, not parsed and written again (a
            // tracked push's id written into it as it is copied).
            w.field("payload", writing: { n.writePayload(into: &$0) })
        case .fcm(let n):
            w.field("headers", members: { _ in })
            w.field("payload", members: { p in p.member("message", writing: { n.writeMessage(into: &$0) }) })
        case .wns(let n):
            w.field("headers", members: { h in
                h.member("X-WNS-Type", n.type)
                h.member("Content-Type", n.contentType)
                if let ttl = n.ttlSeconds { h.member("X-WNS-TTL", String(ttl)) }
            })
            w.field("payload", writing: { n.writeBodyAsJSONString(into: &$0) })
        case .web(let n):
            // What the push service would get, before encryption: the body is encrypted per
            // device, so the outbox shows the plaintext and the RFC 8030 headers.
            w.field("headers", members: { h in
                h.member("TTL", String(n.ttlSeconds))
                h.member("Urgency", n.urgency)
                if let topic = n.topic { h.member("Topic", topic) }
                h.member("Content-Encoding", "aes128gcm")
            })
            w.field("payload", writing: { n.writePayload(into: &$0) })
        case .hms(let n):
            // The body without its token (each device's line names the device).
            w.field("headers", members: { _ in })
            w.field("payload", writing: { $0 += n.body(tokens: []) })
        case .adm(let n):
            w.field("headers", members: { h in
                h.member("X-Amzn-Type-Version", "com.amazon.device.messaging.ADMMessage@1.0")
                h.member("X-Amzn-Accept-Type", "com.amazon.device.messaging.ADMSendResult@1.0")
            })
            w.field("payload", writing: { n.writeBody(into: &$0) })
        }
        w.field("at", Timestamp.rfc3339(date))
        return w.line()
    }
}
