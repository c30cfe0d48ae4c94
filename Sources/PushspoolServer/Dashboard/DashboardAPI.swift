import PushspoolKit
import Foundation
import PushspoolCore

/// The operators' dashboard at `/ui/`: its login form, its page and assets (all compiled into
/// the binary: `DashboardAssets`), and the JSON its page reads and steers through. Every figure
/// comes from the code that answers `status --json`, `GET /v1/jobs/{id}` and `/metrics`
/// (`JobAPI`, `JobStatus`, the desk's funnel, `OperationsAPI`); the page never counts.
///
/// Steering and sending go through `JobAPI`'s own handlers: the same durable path as
/// `POST /v1/jobs` and `POST /v1/jobs/{id}/pause`, behind an operator's session and CSRF token
/// instead of a bearer token (`FrontDoor.Access.operator`).
public struct DashboardAPI: Sendable {
    let sessions: OperatorSessions
    let authenticator: (any RequestAuthenticator)?
    let jobs: JobAPI
    let data: DashboardData
    /// `Secure` on the cookie: serve speaks TLS.
    let secureCookies: Bool
    let trustedProxies: [AddressRange]

    init(sessions: OperatorSessions, authenticator: (any RequestAuthenticator)?, jobs: JobAPI, data: DashboardData,
         secureCookies: Bool, trustedProxies: [AddressRange]) {
        self.sessions = sessions
        self.authenticator = authenticator
        self.jobs = jobs
        self.data = data
        self.secureCookies = secureCookies
        self.trustedProxies = trustedProxies
    }

    public var routes: [FrontDoor.Route] {
        var routes: [FrontDoor.Route] = [
            .init("GET", "/ui", .operatorPage) { $0.respond(Self.asset(DashboardAssets.index)) },
            .init("GET", "/ui/login", .open) { $0.respond(Self.loginPage(status: 200, message: nil)) },
            .init("POST", "/ui/login", .open, login),
            .init("POST", "/ui/logout", .operator, logout),
            .init("GET", "/ui/api/session", .operator) { call in
                guard let cookie = OperatorSessions.cookie(in: call.request.header("Cookie")),
                      let session = sessions.session(cookie: cookie) else { return call.respond(.error(401, "session: log in again")) }
                call.respond(.json(200, .object([("user", .string(session.user)), ("csrf", .string(session.csrf))])))
            },
            .init("GET", "/ui/api/jobs", .operator) { call in call.later { data.campaigns(call.request.query) } },
            .init("POST", "/ui/api/jobs", .operator) { call in
                // The compose page's own checks first (they need the config; parsing and rendering
                // only, as the job API's own parse here), then the job API's path.
                if let refusal = data.refusal(call.request.body) { return call.respond(refusal) }
                jobs.submit(call)
            },
            .init("GET", "/ui/api/jobs/{id}", .operator) { call in
                guard let id = JobAPI.jobID(call) else { return }
                call.later { data.campaign(id: id) }
            },
            .init("GET", "/ui/api/jobs/{id}/results", .operator, jobs.results),
            .init("GET", "/ui/api/jobs/{id}/results.csv", .operator) { call in
                guard let id = JobAPI.jobID(call) else { return }
                call.later { data.resultsCSV(id: id) }
            },
            .init("POST", "/ui/api/jobs/{id}/cancel", .operator) { jobs.steer($0, .cancel) },
            .init("POST", "/ui/api/jobs/{id}/pause", .operator) { jobs.steer($0, .pause) },
            .init("POST", "/ui/api/jobs/{id}/resume", .operator) { jobs.steer($0, nil) },
            .init("POST", "/ui/api/preview", .operator) { call in call.inRegistryLane { data.preview(call.request.body) } },
            .init("GET", "/ui/api/devices", .operator) { call in call.inRegistryLane { data.devices(tags: call.request.query["tags"]) } },
            .init("GET", "/ui/api/system", .operator) { call in call.later { data.system() } },
        ]
        for asset in DashboardAssets.files {
            routes.append(.init("GET", "/ui/assets/\(asset.name)", .open) { $0.respond(Self.asset(asset)) })
        }
        return routes
    }

    static func asset(_ asset: DashboardAssets.File) -> ServerResponse {
        ServerResponse(status: 200, headers: [("Content-Type", asset.contentType)], body: .bytes(Array(asset.text.utf8)))
    }

    /// The login form, with a fixed sentence when the last try failed (never anything the
    /// request carried).
    static func loginPage(status: Int, message: String?, headers: [(String, String)] = []) -> ServerResponse {
        let text = DashboardAssets.login.text.replacingOccurrences(
            of: "<!--message-->", with: message.map { "<p class=\"error\" role=\"alert\">\($0)</p>" } ?? "")
        return ServerResponse(status: status, headers: [("Content-Type", "text/html; charset=utf-8")] + headers, body: .bytes(Array(text.utf8)))
    }

    /// `POST /ui/login` (a form: `user`, `password`): checked against `http.operators_file` with
    /// the address throttle Basic logins have; a session cookie and `303` to `/ui/` when right.
    /// A form posted from another site is refused before any password is checked (login CSRF:
    /// it would sign the browser in as the attacker).
    func login(_ call: FrontDoor.RouteCall) {
        let request = call.request
        if let origin = request.header("Origin"), !Self.sameOrigin(origin, host: request.header("Host")) {
            return call.respond(Self.loginPage(status: 403, message: "This form was sent from another site; open the login page here and try again."))
        }
        let form = Self.formFields(request.body)
        guard let user = form["user"], !user.isEmpty, let password = form["password"] else {
            return call.respond(Self.loginPage(status: 400, message: "Give a user name and a password."))
        }
        guard let authenticator else {
            return call.respond(Self.loginPage(status: 401, message: "No operators are configured."))
        }
        let remote = ForwardedFor.client(remote: request.remote, header: request.header("X-Forwarded-For"), trusted: trustedProxies)
        // Behind a trusted proxy that terminates TLS (`X-Forwarded-Proto: https`), the browser
        // speaks HTTPS too: the cookie is never to travel in clear.
        let behindTLS = ForwardedFor.isTrusted(request.remote, trustedProxies) && request.header("X-Forwarded-Proto")?.lowercased() == "https"
        let (sessions, secure) = (sessions, secureCookies || behindTLS)
        authenticator.operatorLogin(user: user, password: Array(password.utf8), remote: remote) { decision in
            switch decision {
            case .allowed(let principal):
                guard case .operator(let name) = principal else {
                    return call.respond(Self.loginPage(status: 401, message: "Unknown user or wrong password."))
                }
                let (cookie, _) = sessions.begin(user: name)
                call.exchange.principal = principal.description
                call.respond(ServerResponse(status: 303, headers: [("Location", "/ui/"), ("Set-Cookie", OperatorSessions.setCookie(cookie, secure: secure))]))
            case .unauthorized:
                call.respond(Self.loginPage(status: 401, message: "Unknown user or wrong password."))
            case .throttled(let after):
                call.respond(Self.loginPage(status: 429, message: "Too many failed logins from this address: try again in \(after) s.",
                                            headers: [("Retry-After", String(after))]))
            case .busy(let after):
                call.respond(Self.loginPage(status: 503, message: "Too many logins are being checked: try again in \(after) s.",
                                            headers: [("Retry-After", String(after))]))
            }
        }
    }

    /// `POST /ui/logout`: the session ends on the server (its cookie is worthless from now on).
    func logout(_ call: FrontDoor.RouteCall) {
        if let cookie = OperatorSessions.cookie(in: call.request.header("Cookie")) { sessions.end(cookie: cookie) }
        let behindTLS = ForwardedFor.isTrusted(call.request.remote, trustedProxies) && call.request.header("X-Forwarded-Proto")?.lowercased() == "https"
        call.respond(.json(200, .object([("logged_out", true)]),
                           headers: [("Set-Cookie", OperatorSessions.clearCookie(secure: secureCookies || behindTLS))]))
    }

    /// Whether `origin` (`http://host:port`) names the host the request was sent to.
    static func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let scheme = origin.range(of: "://") else { return false }
        return origin[scheme.upperBound...].lowercased() == host.lowercased()
    }

    /// `application/x-www-form-urlencoded` fields (`+` is a space; a repeated field keeps its last value).
    static func formFields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String { RequestPath.decodedLeniently(s.replacingOccurrences(of: "+", with: " ")) }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
