import Foundation
import PushspoolHTTP
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

    /// api-version of a native send, every format (apple, fcmV1, gcm, windows): Microsoft Learn,
    /// Notification Hubs REST reference, "Send an APNs native notification" / "Send a WNS native
    /// notification" / the FCM v1 native send (`ServiceBusNotification-Format: fcmV1`), all
    /// `POST https://{namespace}.servicebus.windows.net/{hub}/messages/?api-version=2015-01`.
    /// (The official .NET SDK sends with 2020-06, also accepted; `2023-10-01-preview` belongs to
    /// the portal's test send only, and hubs answer it 400 BadApiVersion.)
    public static let sendAPIVersion = "2015-01"
    /// api-version of `PUT`/`DELETE /{hub}/installations/{id}`: Microsoft Learn, Notification Hubs
    /// REST reference, "Create or overwrite an installation" and "Delete an installation".
    public static let installationAPIVersion = "2015-01"

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
        // Never sent: the config refuses `routes.web = azure` (and hms, adm) and the provider
        // refuses their notifications before building a request (the hub has no such formats).
        case .web, .hms, .adm: return .windows
        }
    }

    public func url(for format: AzureHubFormat) -> String {
        "\(baseURL)/\(hub)/messages/?api-version=\(apiVersion ?? Self.sendAPIVersion)"
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
        case .web, .hms, .adm:   // never sent (see `format(for:)`): the body as the service would take it
            headers.append(("Content-Type", Self.jsonContentType))
            headers += common(format, tags)
            body = notification.body
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

/// The hub's installations: its own copy of each registration, which it matches tag expressions
/// against. Same conventions as the sends: pure, byte-for-byte comparable.
extension AzureHubRequest {
    /// The installation's `platform`: `apns`, `fcmv1` (`gcm` while `fcm_format` is the legacy
    /// gcm), `wns`. Nil for a platform the hub does not serve.
    public func installationPlatform(_ platform: Platform) -> String? {
        switch platform {
        case .apns: return "apns"
        case .fcm: return fcmFormat == .gcm ? "gcm" : "fcmv1"
        case .wns: return "wns"
        case .web, .hms, .adm: return nil
        }
    }

    /// The hub keeps at most this many tags per installation.
    public static let maxInstallationTags = 60

    /// The installation document of `device`: its tags plus `lang:<lang>` (and `lang:<primary>`
    /// for a regional tag), so localized sends can narrow by language.
    public func installation(_ device: Device) -> JSONValue? {
        guard let platform = installationPlatform(device.platform) else { return nil }
        var tags = device.tags
        for tag in device.lang?.hubTags ?? [] where !tags.contains(tag) { tags.append(tag) }
        return .object([
            ("installationId", .string(device.id)),
            ("platform", .string(platform)),
            ("pushChannel", .string(device.handle)),
            ("tags", .array(tags.map(JSONValue.string))),
        ])
    }

    public func installationURL(id: String) -> String {
        "\(baseURL)/\(hub)/installations/\(AzureSAS.percentEncode(id))?api-version=\(apiVersion ?? Self.installationAPIVersion)"
    }

    /// `PUT /{hub}/installations/{id}`: create or overwrite.
    public func putInstallation(_ device: Device, authorization: String) -> HTTPRequest? {
        guard let document = installation(device) else { return nil }
        return HTTPRequest(method: "PUT", url: installationURL(id: device.id),
                           headers: [("Authorization", authorization), ("Content-Type", "application/json"),
                                     ("x-ms-version", apiVersion ?? Self.installationAPIVersion)],
                           body: document.encoded())
    }

    /// `DELETE /{hub}/installations/{id}`.
    public func deleteInstallation(id: String, authorization: String) -> HTTPRequest {
        HTTPRequest(method: "DELETE", url: installationURL(id: id),
                    headers: [("Authorization", authorization), ("x-ms-version", apiVersion ?? Self.installationAPIVersion)])
    }
}
