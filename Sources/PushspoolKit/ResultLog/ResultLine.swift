import Foundation
import PushspoolCore

/// The result-log line formats (README "Result log"), in one place.
enum ResultLine {
    static func job(_ job: Job, file: String, receivedAt: Date, pns: [Platform], targets: Int) -> JSONValue {
        jobLine(id: job.id, file: file, receivedAt: receivedAt, pns: pns, targets: targets)
    }

    static func jobLine(id: String, file: String, receivedAt: Date, pns: [Platform], targets: Int) -> JSONValue {
        .object([
            ("type", "job"), ("id", .string(id)), ("file", .string(file)),
            ("received_at", .string(Timestamp.rfc3339(receivedAt))),
            ("pns", .array(pns.map { .string($0.rawValue) })),
            ("targets", .int(Int64(targets))),
        ])
    }

    /// A delivery line, written straight to bytes (one per target: the hot path of every job).
    static func delivery(platform: Platform, provider: String, recipient: Recipient, outcome: TargetOutcome, at: Date = Date()) -> [UInt8] {
        var w = JSONLineWriter()
        w.field("type", "delivery")
        w.field("platform", platform.rawValue)
        w.field("provider", provider)
        switch recipient {
        case .device(let d): w.field("device", d.id)
        case .hub(let audience): w.field("tags", audience.hubTags)
        }
        let r = outcome.result
        w.field("status", outcome.status.rawValue)
        w.field("attempts", outcome.attempts)
        w.field("code", r.code)
        // A provider's answer can quote what it was sent: through the one redaction.
        w.field("reason", r.reason.map(Redaction.scrub))
        w.field("provider_id", r.providerID)
        w.field("at", Timestamp.rfc3339(at))
        return w.line()
    }

    static func registration(_ action: String, device: String, platform: Platform?, tags: [String]?) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("type", "registration"), ("action", .string(action)), ("device", .string(device))]
        if let platform { pairs.append(("platform", .string(platform.rawValue))) }
        if let tags { pairs.append(("tags", .array(tags.map(JSONValue.string)))) }
        pairs.append(("at", .string(Timestamp.rfc3339(Date()))))
        return .object(pairs)
    }

    static func summary(id: String, status: String, tally: JobReport.Outcome?, durationMS: Int, error: String?) -> JSONValue {
        var d = 0, f = 0, u = 0, r = 0
        var matched: Int?
        var notSent: Int?
        switch tally {
        case let .done(delivered, failed, unregistered, retries, m, _)?:
            (d, f, u, r, matched) = (delivered, failed, unregistered, retries, m)
        case let .cancelled(delivered, failed, unregistered, retries, n, _)?:
            (d, f, u, r, notSent) = (delivered, failed, unregistered, retries, n)
        default: break
        }
        var pairs: [(String, JSONValue)] = [
            ("type", "summary"), ("id", .string(id)), ("status", .string(status)),
            ("delivered", .int(Int64(d))), ("failed", .int(Int64(f))), ("unregistered", .int(Int64(u))),
            ("retries", .int(Int64(r))), ("duration_ms", .int(Int64(durationMS))),
        ]
        if let matched {
            pairs.append(("matched", .int(Int64(matched))))
            if matched == 0 { pairs.append(("warning", "no registered device matches the audience: nothing was sent")) }
        }
        if let notSent { pairs.append(("not_sent", .int(Int64(notSent)))) }
        if let error { pairs.append(("error", .string(Redaction.scrub(error)))) }
        return .object(pairs)
    }
}
