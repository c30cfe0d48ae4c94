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
public final class SandboxProvider: ImmediateProvider {
    public let name = "sandbox"
    private let outbox: URL
    /// One descriptor per platform file, opened O_APPEND: every write lands whole at the end,
    /// whoever else (another dispatcher on the spool) appends to the same file. Writes happen
    /// under the lock, so two batches never interleave their bytes.
    private let descriptors = Mutex<[Platform: Int32]>([:])
    /// Message ids: unique per process run (a random prefix) and per send (a counter).
    private let idPrefix = "sandbox-" + UUID().uuidString.lowercased().prefix(8) + "-"
    private let sent = Atomic<Int>(0)

    /// The outbox folder is created on the first delivery (`config --check` creates nothing).
    public init(outbox: URL) {
        self.outbox = outbox
    }

    /// A batch of one: its line is written, then it is answered.
    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        completion(send(prepared: [prepare(request)])[0])
    }

    /// Its outbox line, or the refusal the real service would give (no line).
    public func prepare(_ request: SendRequest) -> PreparedSend {
        if case .device(let device) = request.recipient, let refusal = Self.refusal(device.platform, handle: device.handle) {
            return PreparedSend(platform: request.platform, answer: refusal)
        }
        return PreparedSend(platform: request.platform, bytes: Self.outboxLine(request, at: Date()))
    }

    /// Writes the lines of `prepared` with one `write(2)` per platform file, then answers each:
    /// delivered once its line is written (the result log never records a delivery the outbox
    /// lacks), a transient failure the engine retries when the write failed (a full disk, an
    /// unwritable outbox), or the refusal it was prepared with.
    public func send(prepared: [PreparedSend]) -> [ProviderResult] {
        var answers = prepared.map(\.answer)
        // Per platform file: its bytes, and which requests they carry.
        var files: [(platform: Platform, bytes: [UInt8], items: [Int])] = []
        for i in prepared.indices where answers[i] == nil {
            let platform = prepared[i].platform
            if let j = files.firstIndex(where: { $0.platform == platform }) {
                files[j].bytes += prepared[i].bytes
                files[j].items.append(i)
            } else {
                files.append((platform, prepared[i].bytes, [i]))
            }
        }
        for file in files {
            let failure = descriptors.withLock { write(file.bytes, platform: file.platform, &$0) }
            for i in file.items { answers[i] = answer(failure) }
        }
        return answers.map { $0! }
    }

    /// Appends `bytes` to the platform's file (opened, and the outbox created, on first use);
    /// the failure's text, or nil once written.
    private func write(_ bytes: [UInt8], platform: Platform, _ descriptors: inout [Platform: Int32]) -> String? {
        do {
            let fd: Int32
            if let open = descriptors[platform] {
                fd = open
            } else {
                try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o750])
                let path = outbox.appendingPathComponent("\(platform.rawValue).jsonl").path
                fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
                guard fd >= 0 else { throw FileIO.Failure(description: "cannot open \(path): \(FileIO.errnoText())") }
                descriptors[platform] = fd
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
        descriptors.withLock { all in
            for fd in all.values { FileIO.closeDescriptor(fd) }
            all.removeAll()
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
        w.field("at", plainASCII: { Timestamp.append(date, to: &$0) })
        return w.line()
    }
}
