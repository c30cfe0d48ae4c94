import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Azure Notification Hubs as a route: the hub holds the device registrations and resolves the
/// tag expression itself, so the engine sends one request per platform per job (`.hub(audience)`)
/// instead of one per device. Auth is a SAS token derived from the connection string's key,
/// cached in the spool's shared credential cache and renewed shortly before expiry or on a 401.
public final class AzureHubProvider: PushProvider {
    public let name = "azure"
    public var resolvesTags: Bool { true }

    /// SAS lifetime (`se` = now + this). Our choice; the hub sets no maximum that matters here.
    public static let tokenLifetime: Double = 3600
    /// Renew five minutes before `se`, so no request leaves with a token about to expire.
    public static let renewal = RenewalPolicy(expirySkew: 300)

    private let connection: AzureConnectionString
    private let builder: AzureHubRequest
    private let resourceURI: String
    /// The cache entry for this namespace, hub and rule (never the key itself).
    private let cacheKey: String
    private let credentials: CredentialCache
    private let client: any HTTPClient
    private let log: Log
    private let closed = Mutex(false)

    /// Validates the whole section at once; throws `ProviderSetupError` with one line per problem.
    public init(config: AzureConfig, context: ProviderContext) throws {
        var problems: [String] = []
        var connection: AzureConnectionString?
        switch AzureConnectionString.parse(config.connectionString.value) {
        case .success(let c): connection = c
        case .failure(let e): problems += e.problems
        }
        if let why = Self.hubNameProblem(config.hub) { problems.append("providers.azure.hub: \(why)") }
        let fcmFormat = AzureHubFormat(rawValue: config.fcmFormat).flatMap { AzureHubFormat.fcmChoices.contains($0) ? $0 : nil }
        if fcmFormat == nil {
            let choices = AzureHubFormat.fcmChoices.map(\.rawValue).joined(separator: " or ")
            problems.append("providers.azure.fcm_format: \"\(config.fcmFormat)\" is not \(choices)")
        }
        if let v = config.apiVersion, v.isEmpty || !v.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) {
            problems.append("providers.azure.api_version: \"\(v)\" is not an api-version such as \(AzureHubRequest.sendAPIVersion)")
        } else if let v = config.apiVersion, v.hasSuffix("-preview") {
            problems.append("providers.azure.api_version: \"\(v)\" is a portal preview version that hubs refuse for sends (400 BadApiVersion); leave it unset for \(AzureHubRequest.sendAPIVersion)")
        }
        guard problems.isEmpty, let connection, let fcmFormat else { throw ProviderSetupError(problems) }

        self.connection = connection
        builder = AzureHubRequest(baseURL: connection.baseURL, hub: config.hub, fcmFormat: fcmFormat,
                                  apiVersion: config.apiVersion)
        resourceURI = AzureSAS.resourceURI(authority: connection.authority, hub: config.hub)
        cacheKey = "azure-sas-\(connection.authority)-\(config.hub)-\(connection.keyName)"
        credentials = context.credentials
        log = context.log
        // HTTP/1.1 or HTTP/2 by ALPN; `tls.ca_file` is added by the context's client factory.
        var options = HTTPClientOptions()
        options.maxConnectionsPerHost = context.config.maxConnections(for: "azure")
        client = try context.makeHTTPClient(options)
    }

    public func audienceProblem(_ audience: Audience) -> String? {
        if let (field, _) = audience.serviceTarget {
            return field == "channel" ? "an APNs broadcast channel goes to APNs itself (the apns provider), not through a hub"
                : "an FCM \(field) goes to FCM itself (the fcm provider), not through a hub"
        }
        return AzureHubLimits.problem(audience)
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        if closed.withLock({ $0 }) {
            completion(SendOpening.shutDown(name))
            return
        }
        guard case .hub(let audience) = request.recipient else {
            // A routing bug, not the job's fault; never send a device handle to the hub's tag send.
            completion(ProviderResult(.rejected, code: "not-hub-target", reason: "the azure route takes hub audiences, not devices"))
            return
        }
        if case .web = request.notification {
            completion(ProviderResult(.rejected, code: "unsupported", reason: "the azure route does not send Web Push"))
            return
        }
        if let why = audienceProblem(audience) {
            completion(ProviderResult(.rejected, code: "tag-limits", reason: why))
            return
        }
        guard let sas = sasOrRetry(completion) else { return }
        let httpRequest = builder.request(request.notification, tags: audience.hubTags,
                                          authorization: sas.token, now: credentials.now)
        let format = builder.format(for: request.notification).rawValue
        log.debug("azure: job \(request.jobID) \(request.platform.rawValue) → hub \(builder.hub) format \(format) tags \(audience.hubTags ?? "(broadcast)") attempt \(request.attempt)")
        let credentials = credentials, cacheKey = cacheKey
        client.execute(httpRequest) { result in
            switch result {
            case .success(let response):
                let verdict = AzureHubResponse.classify(response, now: credentials.now)
                if verdict.disposition == .refreshCredentials {
                    // Drop exactly the token that was refused; the engine's immediate retry makes
                    // a new one. A second 401 in a row means a wrong key (the engine pauses us).
                    credentials.invalidate(key: cacheKey, token: sas.token, policy: Self.renewal)
                }
                completion(verdict)
            case .failure(let error):
                // The hub's endpoint is configuration: a permanent failure there pauses the provider.
                completion(SendOpening.transportFailure(error, endpoint: .configured))
            }
        }
    }

    public var installations: (any InstallationStore)? { self }

    public func shutdown() {
        let first = closed.withLock { wasClosed in
            defer { wasClosed = true }
            return !wasClosed
        }
        if first { client.shutdown() }
    }

    /// The SAS token for a request, or nil after answering a retry: signing never fails for a
    /// key that was validated at start, but a retry is the safe answer if it ever does.
    private func sasOrRetry(_ completion: @Sendable (ProviderResult) -> Void) -> CachedCredential? {
        do { return try currentSAS() } catch {
            completion(ProviderResult(.retry(after: nil), code: "credentials", reason: "cannot prepare the SAS token"))
            return nil
        }
    }

    /// The shared SAS for this hub, made only when no process sharing the spool holds a fresh one.
    func currentSAS() throws -> CachedCredential {
        let connection = connection, resourceURI = resourceURI, credentials = credentials
        return try credentials.credential(for: cacheKey, policy: Self.renewal) {
            let now = credentials.now
            // Whole seconds: `se` is an integer, and the cache must expire with the token.
            let expiry = Int(now.timeIntervalSince1970 + Self.tokenLifetime)
            let token = AzureSAS.token(resourceURI: resourceURI, keyName: connection.keyName,
                                       key: connection.key, expiry: expiry)
            return CachedCredential(token: token, issuedAt: now,
                                    expiresAt: Date(timeIntervalSince1970: Double(expiry)))
        }
    }

    /// Hub names: letters, digits, `.`, `-`, `_`, starting and ending with a letter or digit.
    static func hubNameProblem(_ hub: String) -> String? {
        if hub.isEmpty { return "missing (the notification hub's name)" }
        if hub.count > 260 { return "longer than 260 characters" }
        let ok = hub.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
        guard ok, let first = hub.first, let last = hub.last,
              first.isLetter || first.isNumber, last.isLetter || last.isNumber else {
            return "\"\(hub)\" is not a hub name (letters, digits, '.', '-', '_'; starts and ends with a letter or digit)"
        }
        return nil
    }
}

extension AzureHubProvider: InstallationStore {
    public func serves(_ platform: Platform) -> Bool { builder.installationPlatform(platform) != nil }

    /// `PUT`/`DELETE /{hub}/installations/{id}`, SAS-signed like the sends (same cache, same
    /// renewal on 401).
    public func apply(_ change: InstallationChange, completion: @escaping @Sendable (ProviderResult) -> Void) {
        if closed.withLock({ $0 }) {
            completion(SendOpening.shutDown(name))
            return
        }
        guard let sas = sasOrRetry(completion) else { return }
        let request: HTTPRequest
        switch change {
        case .put(let device):
            let tagCount = Set(device.tags + (device.lang?.hubTags ?? [])).count
            guard tagCount <= AzureHubRequest.maxInstallationTags else {
                completion(ProviderResult(.rejected, code: "tag-limits",
                                          reason: "\(tagCount) tags; the hub keeps at most \(AzureHubRequest.maxInstallationTags) per installation"))
                return
            }
            guard let put = builder.putInstallation(device, authorization: sas.token) else {
                completion(ProviderResult(.rejected, code: "platform", reason: "the hub keeps no \(device.platform.rawValue) installations"))
                return
            }
            request = put
        case .delete(let id):
            request = builder.deleteInstallation(id: id, authorization: sas.token)
        }
        log.debug("azure: installation \(request.method) \(change.installationID) → hub \(builder.hub)")
        let credentials = credentials, cacheKey = cacheKey, isDelete = request.method == "DELETE"
        client.execute(request) { result in
            switch result {
            case .success(let response):
                let verdict = AzureHubResponse.classifyInstallation(response, isDelete: isDelete, now: credentials.now)
                if verdict.disposition == .refreshCredentials {
                    credentials.invalidate(key: cacheKey, token: sas.token, policy: Self.renewal)
                }
                completion(verdict)
            case .failure(let error):
                completion(SendOpening.transportFailure(error, endpoint: .configured))
            }
        }
    }
}
