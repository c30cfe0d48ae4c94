import Foundation
import PushspoolCore

/// The result-log line formats (SPEC "Result log"), in one place.
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

    static func delivery(platform: Platform, provider: String, recipient: Recipient, outcome: TargetOutcome, at: Date = Date()) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("type", "delivery"), ("platform", .string(platform.rawValue)), ("provider", .string(provider))]
        switch recipient {
        case .device(let d): pairs.append(("device", .string(d.id)))
        case .hub(let audience): pairs.append(("tags", audience.hubTags.map(JSONValue.string) ?? .null))
        }
        let r = outcome.result
        pairs += [
            ("status", .string(outcome.status.rawValue)),
            ("attempts", .int(Int64(outcome.attempts))),
            ("code", r.code.map(JSONValue.string) ?? .null),
            ("reason", r.reason.map(JSONValue.string) ?? .null),
            ("provider_id", r.providerID.map(JSONValue.string) ?? .null),
            ("at", .string(Timestamp.rfc3339(at))),
        ]
        return .object(pairs)
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
        if case let .done(delivered, failed, unregistered, retries, _) = tally {
            (d, f, u, r) = (delivered, failed, unregistered, retries)
        }
        var pairs: [(String, JSONValue)] = [
            ("type", "summary"), ("id", .string(id)), ("status", .string(status)),
            ("delivered", .int(Int64(d))), ("failed", .int(Int64(f))), ("unregistered", .int(Int64(u))),
            ("retries", .int(Int64(r))), ("duration_ms", .int(Int64(durationMS))),
        ]
        if let error { pairs.append(("error", .string(error))) }
        return .object(pairs)
    }
}
