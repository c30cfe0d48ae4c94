import Foundation
import PushspoolCore

/// `ServiceBusNotification-Format` values this provider sends.
public enum AzureHubFormat: String, Sendable, CaseIterable {
    case apple, fcmV1, gcm, windows

    /// The values accepted for `providers.azure.fcm_format`.
    public static let fcmChoices: [AzureHubFormat] = [.fcmV1, .gcm]
}

/// Builds the hub's native-send request (`POST https://<ns>/<hub>/messages/?api-version=…`) from
/// a rendered notification. Pure: the SAS and the clock come in as arguments, so tests compare
/// requests byte for byte. All wire strings of the hub live here.
public struct AzureHubRequest: Sendable {
    /// `https://<host>[:port]`.
    public var baseURL: String
    public var hub: String
    /// Format for the fcm platform: `fcmV1` (default) or the legacy `gcm`.
    public var fcmFormat: AzureHubFormat
    /// Overrides the api-version of every send.
    public var apiVersion: String?

    /// The classic native-send version (apple, gcm, windows).
    public static let defaultAPIVersion = "2015-01"
    /// FCM v1 sends are documented only with this version; whether older versions accept the
    /// `fcmV1` format is unconfirmed (PROTOCOLS.md §4), so fcmV1 sends use it unless overridden.
    public static let fcmV1APIVersion = "2023-10-01-preview"

    public init(baseURL: String, hub: String, fcmFormat: AzureHubFormat = .fcmV1, apiVersion: String? = nil) {
        self.baseURL = baseURL
        self.hub = hub
        self.fcmFormat = fcmFormat
        self.apiVersion = apiVersion
    }

    public func format(for notification: RenderedNotification) -> AzureHubFormat {
        switch notification {
        case .apns: return .apple
        case .fcm: return fcmFormat
        case .wns: return .windows
        }
    }

    public func url(for format: AzureHubFormat) -> String {
        let version = apiVersion ?? (format == .fcmV1 ? Self.fcmV1APIVersion : Self.defaultAPIVersion)
        return "\(baseURL)/\(hub)/messages/?api-version=\(version)"
    }

    /// The request for one platform of one job. `tags` is the audience's hub text; nil (broadcast)
    /// omits the tags header, which sends to every registration of that format.
    public func request(_ notification: RenderedNotification, tags: String?, authorization: String,
                        now: Date) -> HTTPRequest {
        let format = format(for: notification)
        var headers: [(String, String)] = [("Authorization", authorization)]
        let body: [UInt8]
        switch notification {
        case .apns(let n):
            headers.append(("Content-Type", Self.jsonContentType))
            headers += common(format, tags)
            // Pass-through of the APNs headers. The hub cannot override apns-topic (a hub is bound
            // to one bundle id). Expiry goes both as apns-expiration and as the hub's own
            // ServiceBusNotification-Apns-Expiry (W3C date), which older hubs read instead.
            headers.append(("apns-push-type", n.pushType))
            headers.append(("apns-priority", String(n.priority)))
            if let ttl = n.ttlSeconds {
                let expiry = now.addingTimeInterval(Double(ttl))
                headers.append(("apns-expiration", String(Int(expiry.timeIntervalSince1970))))
                headers.append(("ServiceBusNotification-Apns-Expiry", expiry.formatted(.iso8601)))
            }
            if let c = n.collapseID { headers.append(("apns-collapse-id", c)) }
            body = n.payload
        case .fcm(let n):
            headers.append(("Content-Type", Self.jsonContentType))
            headers += common(format, tags)
            body = format == .gcm ? Self.legacyGCMBody(n.message) : notification.body
        case .wns(let n):
            // The hub wants application/xml (not WNS's own text/xml) for toast/tile/badge.
            headers.append(("Content-Type", n.type == "wns/raw" ? "application/octet-stream" : "application/xml"))
            headers += common(format, tags)
            headers.append(("X-WNS-Type", n.type))
            if let ttl = n.ttlSeconds { headers.append(("X-WNS-TTL", String(ttl))) }
            body = n.body
        }
        return HTTPRequest(method: "POST", url: url(for: format), headers: headers, body: body)
    }

    static let jsonContentType = "application/json;charset=utf-8"

    private func common(_ format: AzureHubFormat, _ tags: String?) -> [(String, String)] {
        var h = [("ServiceBusNotification-Format", format.rawValue)]
        if let tags { h.append(("ServiceBusNotification-Tags", tags)) }
        return h
    }

    /// The legacy GCM body (the "notify users" tutorial's `{"data":{"message":"…"}}`) from an
    /// FCM v1 message: `data` and `notification` carry over, and the v1 `android` options map to
    /// their legacy top-level names.
    static func legacyGCMBody(_ message: JSONValue) -> [UInt8] {
        var pairs: [(String, JSONValue)] = [("data", message["data"] ?? .object([]))]
        if let notification = message["notification"] { pairs.append(("notification", notification)) }
        if let android = message["android"] {
            if let key = android["collapse_key"] { pairs.append(("collapse_key", key)) }
            if let priority = android["priority"]?.stringValue { pairs.append(("priority", .string(priority.lowercased()))) }
            if let ttl = android["ttl"]?.stringValue, ttl.hasSuffix("s"), let seconds = Int64(ttl.dropLast()) {
                pairs.append(("time_to_live", .int(seconds)))
            }
        }
        return JSONValue.object(pairs).encoded()
    }
}
