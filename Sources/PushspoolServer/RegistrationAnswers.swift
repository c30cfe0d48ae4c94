import PushspoolKit
import Foundation
import PushspoolCore

/// How the registration routes (the tutorial's and the services') answer what the registry and
/// the hub said.
enum RegistrationAnswers {
    /// The tutorial's field names, for its error messages.
    static let tutorialNames = ["platform": "Platform", "handle": "Handle", "tags": "Tags", "lang": "Lang", "environment": "Environment",
                                "tokenkind": "TokenKind", "timezone": "TimeZone"]

    /// A registry that cannot take the change now: `503` with `Retry-After`; a refused value `400`.
    static func failure(_ error: RegistrationError) -> ServerResponse {
        switch error.kind {
        case .invalid: .error(400, error.message)
        case .busy: .error(503, "the registry is busy; try again", headers: [("Retry-After", "5")])
        case .unavailable: .error(503, "the registry is unreachable; try again", headers: [("Retry-After", "10")])
        case .other: .error(503, "the registry could not make the change; try again", headers: [("Retry-After", "10")])
        }
    }

    /// The registry has the change, the hub did not confirm it: the client's retry is idempotent
    /// (and `pushspool hub sync` repairs it in any case).
    static func hubFailure(_ change: RegistrationChange) -> ServerResponse {
        let why = change.hub.first { !$0.ok }.map(\.summary) ?? "the hub did not confirm"
        return .error(503, "saved, but the notification hub did not take it (\(why)); try again", headers: [("Retry-After", "30")])
    }
}

extension ServerRequest {
    /// The body as a JSON object whose keys (any case, as ASP.NET binds them) are among
    /// `allowed`, by lowercase key; else the `400` naming the field (`names`: how the caller's
    /// format spells each key).
    func jsonObject(allowed: Set<String>, names: [String: String] = [:]) -> Result<[String: JSONValue], Refusal> {
        let value: JSONValue
        do { value = try JSONParser.parse(body) } catch {
            return .failure(Refusal(.error(400, "body: not JSON: \(error)")))
        }
        guard case .object(let pairs) = value else { return .failure(Refusal(.error(400, "body: must be a JSON object, got \(value.typeName)"))) }
        var out: [String: JSONValue] = [:]
        for (key, v) in pairs {
            let k = key.lowercased()
            guard allowed.contains(k) else {
                let expected = allowed.sorted().map { names[$0] ?? $0 }.joined(separator: ", ")
                return .failure(Refusal(.error(400, "\(FrontDoor.printable(key)): unknown field (expected \(expected))")))
            }
            out[k] = v
        }
        return .success(out)
    }
}
