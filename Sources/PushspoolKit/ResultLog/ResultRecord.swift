import Foundation
import PushspoolCore

/// One line of a result log (README "Result log"). Its JSON is defined here and only here: the
/// log writer encodes records with `line()`, and resume, `status`, `submit` and the tests read
/// them back with `init?(line:)`. Every kind is encoded straight to bytes (`JSONLineWriter`), so
/// the delivery line, written once per target, costs no `JSONValue` tree.
public enum ResultRecord: Sendable, Equatable {
    case job(JobLine)
    case delivery(Delivery)
    case registration(Registration)
    case hub(HubWrite)
    case summary(Summary)
    /// A `local_time` job's plan and each of its waves (§ On people's clocks).
    case wave(WaveLine)

    /// A line's `type`: the one list of line types, which the reader dispatches on and the
    /// Result log reference is checked against (one table per type).
    public enum Kind: String, CaseIterable, Sendable {
        case job, delivery, registration, hub, summary, wave
    }

    public var kind: Kind {
        switch self {
        case .job: .job
        case .delivery: .delivery
        case .registration: .registration
        case .hub: .hub
        case .summary: .summary
        case .wave: .wave
        }
    }

    /// `planned`: the instant the job's waves were planned from (written once: a restart plans
    /// the same waves). `sent`/`skipped`: one wave ended (skipped: too late, `reason` says why).
    public struct WaveLine: Sendable, Equatable {
        public var status: String
        /// RFC 3339: when the plan was made (`planned`), or the wave's instant.
        public var at: String
        public var zones: [String] = []
        public var devices: Int = 0
        public var reason: String? = nil

        public init(status: String, at: String, zones: [String] = [], devices: Int = 0, reason: String? = nil) {
            self.status = status
            self.at = at
            self.zones = zones
            self.devices = devices
            self.reason = reason
        }
    }

    /// The first line: which file the job came from and what it planned.
    public struct JobLine: Sendable, Equatable {
        public var id: String
        public var file: String
        /// RFC 3339, as written.
        public var receivedAt: String
        public var pns: [String]
        public var targets: Int
    }

    /// One target's final outcome.
    public struct Delivery: Sendable, Equatable {
        public enum Target: Sendable, Equatable {
            case device(String)
            /// A notification hub's tag expression (nil: every installation).
            case tags(String?)
            /// An audience the service resolves: `topic` or `condition` (FCM) and its value.
            case service(field: String, value: String)
        }
        public var platform: Platform
        public var provider: String
        /// The device's app (§ Several apps); nil in logs written before apps.
        public var app: String? = nil
        public var target: Target
        public var status: DeliveryStatus
        public var attempts: Int
        public var code: String?
        public var reason: String?
        public var providerID: String?
        /// RFC 3339, as written (not parsed back: a resume reads a million of them).
        public var at: String?
    }

    /// A registration job's change to the registry.
    public struct Registration: Sendable, Equatable {
        public var action: String
        public var device: String
        public var platform: String?
        public var tags: [String]?
        public var at: String?
    }

    /// One write of a registration change to a notification hub.
    public struct HubWrite: Sendable, Equatable {
        public var provider: String
        /// `put` or `delete`.
        public var action: String
        public var installation: String
        /// Whether the hub confirmed the write (`done`, else `failed`).
        public var ok: Bool
        public var attempts: Int
        public var code: String?
        public var reason: String?
        public var at: String?
    }

    /// The last line: how the job ended and its counts.
    public struct Summary: Sendable, Equatable {
        public var id: String
        public var status: SummaryStatus
        public var delivered = 0, failed = 0, unregistered = 0, retries = 0
        /// Devices over their app's frequency cap, not sent (written when there are any).
        public var capped = 0
        public var durationMS = 0
        /// Devices the audience matched (nil when a hub resolved the tags, or the job failed).
        public var matched: Int?
        /// Targets a cancel left unsent.
        public var notSent: Int?
        /// Why a failed job failed (one sentence).
        public var error: String?

        static let nothingMatched = "no registered device matches the audience: nothing was sent"

        public init(id: String, status: SummaryStatus, durationMS: Int = 0) {
            (self.id, self.status, self.durationMS) = (id, status, durationMS)
        }

        /// The summary of a job that ended with `outcome`: its status and counts both come from
        /// the outcome, so they cannot disagree. Outcomes that are neither a failure nor a cancel
        /// (a send, a registration change, a duplicate) end a job as done.
        init(id: String, outcome: JobReport.Outcome, durationMS: Int) {
            self.init(id: id, status: .done, durationMS: durationMS)
            switch outcome {
            case let .done(d, f, u, r, m, _, c):
                (status, delivered, failed, unregistered, retries, matched, capped) = (.done, d, f, u, r, m, c)
            case let .cancelled(d, f, u, r, n, _, c):
                (status, delivered, failed, unregistered, retries, notSent, capped) = (.cancelled, d, f, u, r, n, c)
            case .failed(let why):
                (status, error) = (.failed, why)
            default:
                break
            }
        }
    }

    // MARK: Writing

    static func job(_ job: Job, file: String, receivedAt: Date, pns: [Platform], targets: Int) -> ResultRecord {
        jobLine(id: job.id, file: file, receivedAt: receivedAt, pns: pns, targets: targets)
    }

    static func jobLine(id: String, file: String, receivedAt: Date, pns: [Platform], targets: Int) -> ResultRecord {
        .job(JobLine(id: id, file: file, receivedAt: Timestamp.rfc3339(receivedAt), pns: pns.map(\.rawValue), targets: targets))
    }

    /// A delivery line's bytes (one per target: the hot path of every job).
    static func delivery(platform: Platform, provider: String, app: String? = nil, recipient: Recipient, outcome: TargetOutcome,
                         at: Date = Date()) -> [UInt8] {
        var bytes: [UInt8] = []
        appendDelivery(platform: platform, provider: provider, app: app, recipient: recipient, outcome: outcome, at: at, to: &bytes)
        return bytes
    }

    /// A delivery line appended to `bytes` (the lines of targets that finish together share one
    /// buffer and one `write(2)`), as `Delivery.line()` writes it.
    /// `app`: a hub send's app; a device's line carries the device's own.
    static func appendDelivery(platform: Platform, provider: String, app: String? = nil, recipient: Recipient, outcome: TargetOutcome,
                               at: Date, to bytes: inout [UInt8]) {
        let target: Delivery.Target, lineApp: String?
        switch recipient {
        case .device(let d): (target, lineApp) = (.device(d.id), d.app)
        case .hub(let audience):
            (target, lineApp) = (audience.serviceTarget.map { .service(field: $0.field, value: $0.value) } ?? .tags(audience.hubTags), app)
        }
        let r = outcome.result
        var w = JSONLineWriter(continuing: bytes)
        bytes = []   // the writer's buffer is then the only one: appended to in place, not copied
        Delivery.write(&w, platform: platform, provider: provider, app: lineApp, target: target, status: outcome.status, attempts: outcome.attempts,
                       code: r.code, reason: r.reason, providerID: r.providerID) { $0.field("at", plainASCII: { Timestamp.append(at, to: &$0) }) }
        bytes = w.line()
    }

    static func registration(_ action: String, device: String, platform: Platform?, tags: [String]?) -> ResultRecord {
        .registration(Registration(action: action, device: device, platform: platform?.rawValue, tags: tags, at: Timestamp.rfc3339(Date())))
    }

    static func hub(_ write: InstallationWriter.Outcome) -> ResultRecord {
        let action = if case .put = write.change { "put" } else { "delete" }
        return .hub(HubWrite(provider: write.store, action: action, installation: write.change.installationID, ok: write.ok,
                             attempts: write.attempts, code: write.result.code, reason: write.result.reason, at: Timestamp.rfc3339(Date())))
    }

    static func summary(id: String, outcome: JobReport.Outcome, durationMS: Int) -> ResultRecord {
        .summary(Summary(id: id, outcome: outcome, durationMS: durationMS))
    }

    /// The record as one JSON line, newline included.
    public func line() -> [UInt8] {
        switch self {
        case .job(let j): j.line()
        case .delivery(let d): d.line()
        case .registration(let r): r.line()
        case .hub(let h): h.line()
        case .summary(let s): s.line()
        case .wave(let w): w.line()
        }
    }

    // MARK: Reading

    /// A line read back (with or without its newline); nil for a torn line, another program's
    /// line, or a record that lacks what its kind needs.
    public init?(line: some Collection<UInt8>) {
        var bytes = Array(line)
        if bytes.last == 0x0A { bytes.removeLast() }
        guard let v = try? JSONParser.parse(bytes) else { return nil }
        self.init(json: v)
    }

    public init?(json v: JSONValue) {
        func string(_ k: String) -> String? { v[k]?.stringValue }
        func int(_ k: String) -> Int? { if case .int(let n)? = v[k] { Int(n) } else { nil } }
        guard let kind = string("type").flatMap(Kind.init(rawValue:)) else { return nil }
        switch kind {
        case .job:
            guard let id = string("id") else { return nil }
            let pns: [String] = if case .array(let items)? = v["pns"] { items.compactMap(\.stringValue) } else { [] }
            self = .job(JobLine(id: id, file: string("file") ?? "", receivedAt: string("received_at") ?? "", pns: pns, targets: int("targets") ?? 0))
        case .delivery:
            guard let platform = string("platform").flatMap(Platform.init(rawValue:)),
                  let status = string("status").flatMap(DeliveryStatus.init(rawValue:)) else { return nil }
            let target: Delivery.Target = if let device = string("device") {
                .device(device)
            } else if let field = ["topic", "condition", "channel"].first(where: { string($0) != nil }), let value = string(field) {
                .service(field: field, value: value)
            } else {
                .tags(string("tags"))
            }
            self = .delivery(Delivery(platform: platform, provider: string("provider") ?? "", app: string("app"), target: target, status: status,
                                      attempts: int("attempts") ?? 1, code: string("code"), reason: string("reason"),
                                      providerID: string("provider_id"), at: string("at")))
        case .registration:
            guard let action = string("action"), let device = string("device") else { return nil }
            let tags: [String]? = if case .array(let items)? = v["tags"] { items.compactMap(\.stringValue) } else { nil }
            self = .registration(Registration(action: action, device: device, platform: string("platform"), tags: tags, at: string("at")))
        case .hub:
            guard let installation = string("installation") else { return nil }
            self = .hub(HubWrite(provider: string("provider") ?? "", action: string("action") ?? "", installation: installation,
                                 ok: string("status") == "done", attempts: int("attempts") ?? 1, code: string("code"),
                                 reason: string("reason"), at: string("at")))
        case .summary:
            guard let id = string("id"), let status = string("status").flatMap(SummaryStatus.init(rawValue:)) else { return nil }
            var s = Summary(id: id, status: status, durationMS: int("duration_ms") ?? 0)
            (s.delivered, s.failed, s.unregistered, s.retries) = (int("delivered") ?? 0, int("failed") ?? 0, int("unregistered") ?? 0, int("retries") ?? 0)
            (s.matched, s.notSent, s.error, s.capped) = (int("matched"), int("not_sent"), string("error"), int("capped") ?? 0)
            self = .summary(s)
        case .wave:
            guard let status = string("status"), let at = string("at") else { return nil }
            let zones: [String] = if case .array(let items)? = v["zones"] { items.compactMap(\.stringValue) } else { [] }
            self = .wave(WaveLine(status: status, at: at, zones: zones, devices: int("devices") ?? 0, reason: string("reason")))
        }
    }
}

extension ResultRecord.WaveLine {
    func line() -> [UInt8] {
        var w = JSONLineWriter(capacity: 200)
        w.field("type", "wave")
        w.field("status", status)
        w.field("at", at)
        if !zones.isEmpty { w.field("zones", strings: zones) }
        if status != "planned" { w.field("devices", devices) }
        if let reason { w.field("reason", reason) }
        return w.line()
    }
}

extension ResultRecord.JobLine {
    func line() -> [UInt8] {
        var w = JSONLineWriter(capacity: 160)
        w.field("type", "job")
        w.field("id", id)
        w.field("file", file)
        w.field("received_at", receivedAt)
        w.field("pns", strings: pns)
        w.field("targets", targets)
        return w.line()
    }
}

extension ResultRecord.Delivery {
    func line() -> [UInt8] {
        var w = JSONLineWriter()
        Self.write(&w, platform: platform, provider: provider, app: app, target: target, status: status, attempts: attempts,
                   code: code, reason: reason, providerID: providerID) { $0.field("at", at) }
        return w.line()
    }

    /// The one definition of a delivery line's fields, for a record and for the hot path.
    static func write(_ w: inout JSONLineWriter, platform: Platform, provider: String, app: String?, target: Target, status: DeliveryStatus,
                      attempts: Int, code: String?, reason: String?, providerID: String?, at: (inout JSONLineWriter) -> Void) {
        w.field("type", "delivery")
        w.field("platform", platform.rawValue)
        w.field("provider", provider)
        if let app { w.field("app", app) }
        switch target {
        case .device(let id): w.field("device", id)
        case .tags(let tags): w.field("tags", tags)
        case .service(let field, let value):
            // FCM's two and APNs's broadcast channel (the writer takes keys as static strings).
            switch field {
            case "topic": w.field("topic", value)
            case "channel": w.field("channel", value)
            default: w.field("condition", value)
            }
        }
        w.field("status", status.rawValue)
        w.field("attempts", attempts)
        w.field("code", code)
        // A provider's answer can quote what it was sent: through the one redaction.
        w.field("reason", reason.map(Redaction.scrub))
        w.field("provider_id", providerID)
        at(&w)
    }
}

extension ResultRecord.Registration {
    func line() -> [UInt8] {
        var w = JSONLineWriter(capacity: 160)
        w.field("type", "registration")
        w.field("action", action)
        w.field("device", device)
        if let platform { w.field("platform", platform) }
        if let tags { w.field("tags", strings: tags) }
        w.field("at", at)
        return w.line()
    }
}

extension ResultRecord.HubWrite {
    func line() -> [UInt8] {
        var w = JSONLineWriter(capacity: 200)
        w.field("type", "hub")
        w.field("provider", provider)
        w.field("action", action)
        w.field("installation", installation)
        w.field("status", ok ? "done" : "failed")
        w.field("attempts", attempts)
        w.field("code", code)
        w.field("reason", reason)
        w.field("at", at)
        return w.line()
    }
}

extension ResultRecord.Summary {
    /// Warns when an audience matched no device: a job that sent nothing is done, but says so.
    public var warning: String? { matched == 0 ? Self.nothingMatched : nil }

    func line() -> [UInt8] {
        var w = JSONLineWriter(capacity: 200)
        w.field("type", "summary")
        w.field("id", id)
        w.field("status", status.rawValue)
        w.field("delivered", delivered)
        w.field("failed", failed)
        w.field("unregistered", unregistered)
        if capped > 0 { w.field("capped", capped) }
        w.field("retries", retries)
        w.field("duration_ms", durationMS)
        if let matched { w.field("matched", matched) }
        if let warning { w.field("warning", warning) }
        if let notSent { w.field("not_sent", notSent) }
        if let error { w.field("error", Redaction.scrub(error)) }
        return w.line()
    }

    /// The fields `status --json` and `GET /v1/jobs/{id}` show of an ended job, as the log has them.
    var fields: [(String, JSONValue)] {
        guard case .object(let pairs)? = try? JSONParser.parse(Array(line().dropLast())) else { return [] }
        return pairs.filter { !["type", "id", "status"].contains($0.0) }
    }
}
