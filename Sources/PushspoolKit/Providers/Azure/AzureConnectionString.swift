/// A Notification Hubs connection string:
/// `Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=<rule>;SharedAccessKey=<key>`.
///
/// Parsing reports every problem at once and never quotes any part of the string (a missing `;`
/// would put the key inside the endpoint), so the problems can go straight to
/// `pushspool config --check` output.
public struct AzureConnectionString: Sendable, Equatable {
    /// `https://<host>[:port]`, no trailing slash: the `sb://` endpoint with `sb` replaced by
    /// `https`. The port is kept (tests point it at a local fake hub).
    public var baseURL: String
    /// `<host>[:port]` exactly as written (lowercased), the authority of the SAS resource URI.
    public var authority: String
    public var keyName: String
    public var key: String

    public static func parse(_ text: String) -> Result<AzureConnectionString, ProviderSetupError> {
        let field = "providers.azure.connection_string"
        var values: [String: String] = [:]
        for segment in text.split(separator: ";", omittingEmptySubsequences: true) {
            // Split at the first "=" only: base64 keys end with "=" padding.
            guard let eq = segment.firstIndex(of: "=") else { continue }
            let name = segment[..<eq].trimmingSpaces.lowercased()
            values[name] = String(segment[segment.index(after: eq)...]).trimmingSpaces
        }
        var problems: [String] = []
        if text.trimmingSpaces.isEmpty {
            return .failure(ProviderSetupError(["\(field): missing (expected Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)"]))
        }
        var authority = ""
        if let endpoint = values["endpoint"], !endpoint.isEmpty {
            switch Self.authority(ofEndpoint: endpoint) {
            case .success(let a): authority = a
            case .failure(let why): problems.append("\(field): Endpoint \(why)")
            }
        } else {
            problems.append("\(field): missing Endpoint=sb://<namespace>.servicebus.windows.net/")
        }
        let keyName = values["sharedaccesskeyname"] ?? ""
        if keyName.isEmpty { problems.append("\(field): missing SharedAccessKeyName") }
        let key = values["sharedaccesskey"] ?? ""
        if key.isEmpty { problems.append("\(field): missing SharedAccessKey") }
        guard problems.isEmpty else { return .failure(ProviderSetupError(problems)) }
        return .success(AzureConnectionString(baseURL: "https://\(authority)", authority: authority,
                                              keyName: keyName, key: key))
    }

    /// `sb://host[:port][/]` (or `https://…`) → `host[:port]`, lowercased. No path, query or
    /// credentials in the authority: the hub name is configured separately.
    static func authority(ofEndpoint endpoint: String) -> Result<String, EndpointError> {
        let lower = endpoint.lowercased()
        let rest: Substring
        if lower.hasPrefix("sb://") {
            rest = lower.dropFirst(5)
        } else if lower.hasPrefix("https://") {
            rest = lower.dropFirst(8)
        } else {
            return .failure(EndpointError("must start with sb://"))
        }
        var authority = rest
        if let slash = authority.firstIndex(of: "/") {
            guard authority[slash...].allSatisfy({ $0 == "/" }) else {
                return .failure(EndpointError("must be sb://<namespace>.servicebus.windows.net/ without a path"))
            }
            authority = authority[..<slash]
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-:")
        guard !authority.isEmpty, authority.allSatisfy({ allowed.contains($0) }) else {
            return .failure(EndpointError("has no valid host"))
        }
        if let colon = authority.firstIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard let n = Int(port), (1...65535).contains(n), colon != authority.startIndex else {
                return .failure(EndpointError("has an invalid host or port"))
            }
        }
        return .success(String(authority))
    }

    struct EndpointError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
