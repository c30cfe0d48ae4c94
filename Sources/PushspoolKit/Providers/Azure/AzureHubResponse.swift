import Foundation
import PushspoolHTTP
import PushspoolCore

/// Classifies the hub's answer to a native send (README: "How answers are handled"):
///
/// | status | disposition |
/// |---|---|
/// | 200, 201 | delivered (accepted for fan-out), id from `Location` or a tracking header |
/// | 401 | refreshCredentials (the provider has already dropped the SAS) |
/// | 403 | "message too large" → rejected; otherwise quota → retry after `Retry-After`, if any |
/// | 400, 404, 413, other 4xx | rejected, with the hub's detail as reason |
/// | 429, 5xx | retry after `Retry-After`, if any |
public enum AzureHubResponse {
    public static func classify(_ response: HTTPResponse, now: Date = Date()) -> ProviderResult {
        let code = String(response.status)
        let detail = errorDetail(response.body)
        switch response.status {
        case 200, 201:
            return ProviderResult(.delivered, code: code, providerID: notificationID(response))
        case 401:
            return ProviderResult(.refreshCredentials, code: code, reason: detail ?? "SAS token rejected")
        case 403:
            if let detail, isSizeComplaint(detail) {
                return ProviderResult(.rejected, code: code, reason: detail)
            }
            return ProviderResult(.retry(after: RetryAfter.seconds(response[header: "retry-after"], now: now)),
                                  code: code, reason: "quota exceeded" + (detail.map { ": \($0)" } ?? ""))
        case 429, 500...599:
            return ProviderResult(.retry(after: RetryAfter.seconds(response[header: "retry-after"], now: now)),
                                  code: code, reason: detail ?? (response.status == 429 ? "throttled" : "hub error"))
        case 404:
            return ProviderResult(.rejected, code: code, reason: detail ?? "no such hub or path (check namespace and hub name)")
        case 413:
            return ProviderResult(.rejected, code: code, reason: detail ?? "request entity too large")
        default:
            return ProviderResult(.rejected, code: code, reason: detail ?? "rejected by the hub")
        }
    }

    /// The hub's answer to `PUT`/`DELETE /{hub}/installations/{id}`: 200/201/204 hold the
    /// change (delivered); a DELETE's 404 means already gone, also done; otherwise as a send
    /// (401 renew the SAS, 403/429/5xx retry, other 4xx rejected).
    public static func classifyInstallation(_ response: HTTPResponse, isDelete: Bool, now: Date = Date()) -> ProviderResult {
        switch response.status {
        case 200, 201, 204:
            return ProviderResult(.delivered, code: String(response.status))
        case 404 where isDelete:
            return ProviderResult(.delivered, code: "404", reason: "no such installation (already removed)")
        case 403:
            let detail = errorDetail(response.body)
            return ProviderResult(.retry(after: RetryAfter.seconds(response[header: "retry-after"], now: now)),
                                  code: "403", reason: detail ?? "quota exceeded")
        default:
            return classify(response, now: now)
        }
    }

    /// The notification id from `Location: https://<ns>/<hub>/messages/<id>?api-version=…`
    /// (Standard tier), else a tracking header (names vary by SDK: `TrackingId`, then the
    /// correlation/request ids).
    static func notificationID(_ response: HTTPResponse) -> String? {
        if let location = response[header: "location"] {
            let path = location.split(separator: "?", maxSplits: 1).first.map(String.init) ?? location
            if let range = path.range(of: "/messages/") {
                let id = path[range.upperBound...].split(separator: "/").first.map(String.init) ?? ""
                if !id.isEmpty { return id }
            }
        }
        for name in ["trackingid", "x-ms-correlation-request-id", "x-ms-request-id"] {
            if let v = response[header: name], !v.isEmpty { return v }
        }
        return nil
    }

    /// A 403 is either a quota or a size verdict; only the body tells them apart.
    static func isSizeComplaint(_ detail: String) -> Bool {
        let d = detail.lowercased()
        return d.contains("too large") || d.contains("too big") || d.contains("size")
    }

    /// The hub's error text: `<Error><Code>…</Code><Detail>…</Detail></Error>`, else the body
    /// itself when it is short text. One line, at most 200 characters.
    static func errorDetail(_ body: [UInt8]) -> String? {
        guard !body.isEmpty else { return nil }
        var text = String(decoding: body.prefix(4096), as: UTF8.self)
        if let start = text.range(of: "<Detail>"), let end = text.range(of: "</Detail>", range: start.upperBound..<text.endIndex) {
            text = String(text[start.upperBound..<end.lowerBound])
        } else if text.hasPrefix("<") {
            return nil
        }
        let line = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        guard !line.isEmpty else { return nil }
        return line.count > 200 ? String(line.prefix(200)) + "…" : line
    }
}
