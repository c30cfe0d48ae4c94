import Foundation
import PushspoolCore

/// One event as receivers get it: `{"id", "type", "created_at", "data"}`. Its `id` is fixed when
/// the event is made and kept across retries and restarts (the body is stored as sent), so a
/// receiver drops the copies at-least-once delivery may bring.
struct WebhookEvent: Sendable {
    var id: String
    var type: WebhookConfig.Event
    var createdAt: Date
    /// `data`, as JSON.
    var data: [UInt8]
    /// The apps the event is about (a webhook's `apps` filters on them).
    var apps: [String]
    /// Events with the same key are delivered in the order made: the job's id.
    var order: String

    /// A device the send path removed from the registry: `{device, app, platform, reason}`,
    /// never its handle.
    struct GoneDevice: Sendable {
        var device: String
        var app: String
        var platform: Platform
        var reason: String
    }

    /// Up to this many devices per `device.unregistered` event.
    static let maxDevicesPerEvent = 1_000

    var body: [UInt8] {
        var w = JSONLineWriter(capacity: data.count + 160)
        w.field("id", id)
        w.field("type", type.rawValue)
        w.field("created_at", plainASCII: { Timestamp.append(createdAt, to: &$0) })
        w.field("data", json: data)
        return Array(w.line().dropLast())   // no newline: a body, not a log line
    }

    /// `job.finished` of job `id`: the result log's summary (its `type` left out), with the app.
    /// Its event id is derived from the job's id, so a job finished again after a crash (its
    /// file still in `active/`) repeats the same event, which receivers drop.
    static func jobFinished(summary: [UInt8], jobID: String, apps: [String], at: Date = Date()) -> WebhookEvent {
        var data = summary
        // `{"type":"summary","id":…` → `{"id":…`: the summary line's own fields.
        let prefix = Array(#"{"type":"summary","#.utf8)
        if data.starts(with: prefix) { data = [UInt8(ascii: "{")] + data.dropFirst(prefix.count) }
        while data.last == UInt8(ascii: "\n") { data.removeLast() }
        if data.last == UInt8(ascii: "}") {
            data.removeLast()
            data += Array(#","apps":"#.utf8) + JSONValue.array(apps.map(JSONValue.string)).encoded() + [UInt8(ascii: "}")]
        }
        return WebhookEvent(id: "evt_" + StableUUID.make("job.finished", jobID), type: .jobFinished, createdAt: at,
                            data: data, apps: apps, order: jobID)
    }

    /// `device.unregistered` events of job `jobID` for `devices` of one app: one per 1,000.
    static func devicesUnregistered(_ devices: [GoneDevice], jobID: String, app: String, at: Date = Date()) -> [WebhookEvent] {
        stride(from: 0, to: devices.count, by: maxDevicesPerEvent).map { start in
            let part = devices[start..<min(devices.count, start + maxDevicesPerEvent)]
            var list = JSONLineWriter(capacity: part.count * 90)
            list.field("job", jobID)
            list.field("app", app)
            let items = part.map { d -> JSONValue in
                .object([("device", .string(d.device)), ("app", .string(d.app)), ("platform", .string(d.platform.rawValue)),
                         ("reason", .string(d.reason))])
            }
            list.field("devices", JSONValue.array(items))
            return WebhookEvent(id: "evt_" + UUID().uuidString.lowercased(), type: .deviceUnregistered, createdAt: at,
                                data: Array(list.line().dropLast()), apps: [app], order: jobID)
        }
    }
}
