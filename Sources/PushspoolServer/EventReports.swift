import PushspoolKit
import Foundation
import PushspoolCore

/// The bodies apps and services report events with, read whole before anything is recorded: a
/// body that is not JSON, an unknown field or event type, an `at` that is not an RFC 3339 time,
/// an id of the wrong shape or more than `NotificationEvent.maxBatch` events refuse the request
/// with one line naming the field, and the desk never sees it. What only the registry can judge
/// (an unknown or foreign id, an `at` older than the job or in the future) is the desk's, per event.
enum EventReports {
    /// `POST /api/notifications/{id}/events`: `{"type": "received"|"opened"|"dismissed", "at"?}`.
    static func single(id: String, body: [UInt8]) -> Result<NotificationEvent, Refusal> {
        let value: JSONValue
        do { value = try JSONParser.parse(body) } catch {
            return .failure(Refusal(.error(400, "body: not JSON (expected {\"type\": \"received\"|\"opened\"|\"dismissed\"})")))
        }
        return event(value, id: .string(id), field: "")
    }

    /// `POST /v1/events`: `[{"id", "type", "at"?}, …]`, at most `NotificationEvent.maxBatch`.
    static func batch(_ body: [UInt8]) -> Result<[NotificationEvent], Refusal> {
        let value: JSONValue
        do { value = try JSONParser.parse(body) } catch {
            return .failure(Refusal(.error(400, "body: not JSON (expected an array of {\"id\", \"type\", \"at\"?})")))
        }
        guard case .array(let items) = value else {
            return .failure(Refusal(.error(400, "body: must be a JSON array of events, got \(value.typeName)")))
        }
        guard items.count <= NotificationEvent.maxBatch else {
            return .failure(Refusal(.error(400, "body: \(items.count) events; at most \(NotificationEvent.maxBatch) in one request")))
        }
        var events: [NotificationEvent] = []
        events.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            guard case .object(let pairs) = item else {
                return .failure(Refusal(.error(400, "[\(i)]: must be an object {\"id\", \"type\", \"at\"?}, got \(item.typeName)")))
            }
            switch event(item, id: pairs.first { $0.0 == "id" }?.1, field: "[\(i)].") {
            case .success(let e): events.append(e)
            case .failure(let refusal): return .failure(refusal)
            }
        }
        return .success(events)
    }

    /// One event object; `field` prefixes the names in errors (`[3].`). `id` is the path's id
    /// (the single route) or the object's own `"id"`.
    private static func event(_ value: JSONValue, id: JSONValue?, field: String) -> Result<NotificationEvent, Refusal> {
        guard case .object(let pairs) = value else {
            return .failure(Refusal(.error(400, "body: must be a JSON object {\"type\": …}, got \(value.typeName)")))
        }
        let allowed: Set<String> = field.isEmpty ? ["type", "at"] : ["id", "type", "at"]
        for (key, _) in pairs where !allowed.contains(key) {
            return .failure(Refusal(.error(400, "\(field)\(FrontDoor.printable(key)): unknown field (expected \(allowed.sorted().joined(separator: ", ")))")))
        }
        guard case .string(let idText)? = id else {
            return .failure(Refusal(.error(400, "\(field)id: required, the notification id as a string")))
        }
        if let problem = NotificationIDShape.problem(idText) {
            return .failure(Refusal(.error(400, "\(field)id: \(problem)")))
        }
        let fields = Dictionary(pairs, uniquingKeysWith: { _, last in last })
        guard let typeValue = fields["type"] else {
            return .failure(Refusal(.error(400, "\(field)type: required (\(typeNames))")))
        }
        guard case .string(let typeName) = typeValue, let type = NotificationEventType(rawValue: typeName) else {
            let got = typeValue.stringValue.map { "\"\(FrontDoor.printable($0))\"" } ?? typeValue.typeName
            return .failure(Refusal(.error(400, "\(field)type: must be one of \(typeNames), got \(got)")))
        }
        var at: Date?
        if let atValue = fields["at"], atValue != .null {
            guard case .string(let text) = atValue, let date = RFC3339.date(from: text) else {
                return .failure(Refusal(.error(400, "\(field)at: must be an RFC 3339 time with its offset, e.g. 2026-11-28T09:30:00Z")))
            }
            at = date
        }
        return .success(NotificationEvent(id: idText, type: type, at: at))
    }

    static let typeNames = NotificationEventType.allCases.map(\.rawValue).joined(separator: ", ")
}
