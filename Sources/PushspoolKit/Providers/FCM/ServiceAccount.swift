import Foundation
import PushspoolCore

/// The parts of a Google service-account JSON key file that FCM HTTP v1 needs.
struct ServiceAccount: Sendable {
    var projectID: String
    var clientEmail: String
    var privateKeyID: String?
    var tokenURI: String
    var key: SigningKey

    /// Loads and checks the file, reporting every problem at once, one line each.
    static func load(_ url: URL) -> Result<ServiceAccount, ProviderSetupError> {
        let field = "providers.fcm.service_account_file"
        guard let data = FileManager.default.contents(atPath: url.path) else {
            return .failure(ProviderSetupError(["\(field): cannot read \(url.path): \(FileIO.whyUnreadable(url))"]))
        }
        guard let json = try? JSONParser.parse(Array(data)), case .object = json else {
            return .failure(ProviderSetupError(["\(field): \(url.path) is not a JSON object"]))
        }
        return parse(json, path: url.path)
    }

    static func parse(_ json: JSONValue, path: String) -> Result<ServiceAccount, ProviderSetupError> {
        let prefix = "providers.fcm.service_account_file: \(path)"
        var problems: [String] = []
        func string(_ name: String) -> String? {
            guard let v = json[name] else {
                problems.append("\(prefix): field \"\(name)\" is missing")
                return nil
            }
            guard let s = v.stringValue, !s.isEmpty else {
                problems.append("\(prefix): field \"\(name)\" must be a non-empty string")
                return nil
            }
            return s
        }
        if let type = json["type"]?.stringValue, type != "service_account" {
            problems.append("\(prefix): \"type\" is \"\(OAuthTokenEndpoint.clip(type))\", expected \"service_account\"")
        }
        let projectID = string("project_id")
        let email = string("client_email")
        let pem = string("private_key")
        // Google's files always carry token_uri; the public endpoint is the documented fallback.
        let tokenURI = json["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token"
        if let p = ProviderSetupChecks.httpsURLProblem(tokenURI, field: "\(prefix): token_uri") { problems.append(p) }
        if let projectID, !projectID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.:_".contains($0)) }) {
            problems.append("\(prefix): project_id \"\(OAuthTokenEndpoint.clip(projectID))\" has characters a project id cannot have")
        }
        var key: SigningKey?
        if let pem {
            do {
                let k = try SigningKey(pem: pem)
                if k.kind == .rsa { key = k } else { problems.append("\(prefix): private_key is not an RSA key (RS256 needs one)") }
            } catch {
                // The error text comes from OpenSSL and never echoes the key.
                problems.append("\(prefix): private_key does not parse (\(error))")
            }
        }
        guard problems.isEmpty, let projectID, let email, let key else {
            return .failure(ProviderSetupError(problems))
        }
        return .success(ServiceAccount(projectID: projectID, clientEmail: email,
                                       privateKeyID: json["private_key_id"]?.stringValue,
                                       tokenURI: tokenURI, key: key))
    }

    /// The RS256 JWT for Google's JWT-bearer grant: `exp` is one hour after `iat`, Google's maximum.
    func assertion(now: Date) throws -> String {
        let iat = Int64(now.timeIntervalSince1970)
        var header: [(String, JSONValue)] = [("alg", "RS256"), ("typ", "JWT")]
        if let privateKeyID { header.append(("kid", .string(privateKeyID))) }
        return try JWT.sign(header: header, claims: [
            ("iss", .string(clientEmail)),
            ("scope", .string(Self.scope)),
            ("aud", .string(tokenURI)),
            ("iat", .int(iat)),
            ("exp", .int(iat + 3600)),
        ], key: key)
    }

    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
}
