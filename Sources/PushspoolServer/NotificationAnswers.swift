import PushspoolKit
import Foundation
import PushspoolCore

/// What the notification routes answer, worked out from what the desk said and nothing else: the
/// answer to an unknown, a forged and another user's id is one value, built once, so its status,
/// headers and body are the same bytes whichever it was.
enum NotificationAnswers {
    /// Secure content and the misses are never stored by a browser or a proxy.
    static let noStore = ("Cache-Control", "no-store")

    /// The one `404` of every notification route: it names no id (an id in the body would make
    /// each answer differ) and says nothing of why.
    static let notFound = ServerResponse.error(404, "id: no notification of yours has this id", headers: [noStore])

    static let gone = ServerResponse.error(410, "id: this notification's content has expired and was erased", headers: [noStore])

    /// The registry could not answer now: `503` with `Retry-After`, as the registration routes
    /// answer the same outages (`RegistrationAnswers`). Not a `404`: an app told "no such
    /// notification" drops it, while this one is still there to fetch or report.
    static func unavailable(_ kind: RegistryError.Kind, nothingRecorded: Bool = false) -> ServerResponse {
        let retry = nothingRecorded ? "; nothing was recorded, report again" : "; try again"
        return switch kind {
        case .busy: .error(503, "the registry is busy\(retry)", headers: [noStore, ("Retry-After", "5")])
        case .unavailable: .error(503, "the registry is unreachable\(retry)", headers: [noStore, ("Retry-After", "10")])
        case .refused: .error(503, "the registry could not be read\(retry)", headers: [noStore, ("Retry-After", "10")])
        }
    }

    /// `GET /api/notifications/{id}`: the tutorial's `{"Id", "Payload", "Read"}`, in its order and case.
    static func tutorial(_ fetched: NotificationFetch) -> ServerResponse {
        switch fetched {
        case .content(let c, let read):
            .json(200, .object([("Id", .string(c.id)), ("Payload", .string(c.message)), ("Read", .bool(read))]), headers: [noStore])
        case .notFound: notFound
        case .gone: gone
        case .unavailable(let kind): unavailable(kind)
        }
    }

    /// `GET /v1/notifications/{id}`: the whole content, times in RFC 3339 UTC.
    static func full(_ fetched: NotificationFetch) -> ServerResponse {
        switch fetched {
        case .content(let c, _):
            .json(200, .object([
                ("id", .string(c.id)), ("job", .string(c.job)), ("app", .string(c.app)), ("platform", .string(c.platform.rawValue)),
                ("title", c.title.map(JSONValue.string) ?? .null), ("message", .string(c.message)),
                ("data", c.data.map { data in .object(data.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }) } ?? .null),
                ("url", c.url.map(JSONValue.string) ?? .null), ("image", c.image.map(JSONValue.string) ?? .null),
                ("sent_at", .string(Timestamp.rfc3339(c.sentAt))), ("expires_at", .string(Timestamp.rfc3339(c.expiresAt))),
            ]), headers: [noStore])
        case .notFound: notFound
        case .gone: gone
        case .unavailable(let kind): unavailable(kind)
        }
    }

    /// `POST /api/notifications/{id}/events`: `200` counted (now or before), the one `404`, or
    /// `400` naming the field the desk refused.
    static func single(_ event: NotificationEvent, _ status: NotificationEventStatus) -> ServerResponse {
        switch status {
        case .recorded, .duplicate: .json(200, item(event, status))
        case .notFound: notFound
        case .invalid(let field, let why): .error(400, "\(field): \(why)")
        case .unavailable(let kind): unavailable(kind, nothingRecorded: true)
        }
    }

    /// `POST /v1/events`: one answer per event, in the order sent.
    static func batch(_ events: [NotificationEvent], _ statuses: [NotificationEventStatus]) -> ServerResponse {
        guard statuses.count == events.count else {
            // The desk broke its contract: say so rather than pair answers with the wrong events.
            return .error(500, "events: the registry answered \(statuses.count) statuses for \(events.count) events")
        }
        // An outage leaves nothing of the batch recorded: the whole batch is answered `503`, so
        // the backend sends it again as it is (each (id, type) counts once).
        for case .unavailable(let kind) in statuses { return unavailable(kind, nothingRecorded: true) }
        return .json(200, .array(zip(events, statuses).enumerated().map { i, pair in item(pair.0, pair.1, index: i) }))
    }

    /// `{"id", "type", "status": "recorded"|"duplicate"|"not_found"|"invalid", "error"?}`.
    private static func item(_ event: NotificationEvent, _ status: NotificationEventStatus, index: Int? = nil) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("id", .string(event.id)), ("type", .string(event.type.rawValue))]
        switch status {
        case .recorded: pairs.append(("status", "recorded"))
        case .duplicate: pairs.append(("status", "duplicate"))
        case .notFound: pairs.append(("status", "not_found"))
        case .invalid(let field, let why):
            pairs.append(("status", "invalid"))
            pairs.append(("error", .string("\(index.map { "[\($0)]." } ?? "")\(field): \(why)")))
        case .unavailable:
            // Never written: `batch` answers an outage as a whole (`503`).
            pairs.append(("status", "unavailable"))
        }
        return .object(pairs)
    }
}
