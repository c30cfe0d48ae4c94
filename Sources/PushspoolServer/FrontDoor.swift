import PushspoolKit
import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// The routes of `pushspool serve` and what stands before them: matching a path to a route,
/// checking credentials for the route's kind of caller, and after each answer the access log
/// line and the metrics. The routes themselves (`TutorialAPI`, `JobAPI`, `DeviceAPI`,
/// `OperationsAPI`) turn requests into what the spool and registry already take.
public final class FrontDoor: Sendable {
    /// Who may call a route.
    public enum Access: Sendable {
        /// Anyone (`/healthz`).
        case open
        /// App users, HTTP Basic against `http.users_file` (the tutorial's API).
        case user
        /// Services, `Authorization: Bearer` from `http.tokens_file`.
        case service
        /// Either: a bearer token is checked as a service's, anything else as an app user's
        /// (`GET /v1/notifications/{id}`, read by apps and by their backends).
        case userOrService
        /// Operators of the dashboard: a session cookie from its login form (`OperatorSessions`),
        /// never Basic or a bearer token. A request that changes anything (any method but GET
        /// and HEAD) also carries the session's CSRF token in `X-CSRF-Token`.
        case `operator`
        /// A dashboard page: as `.operator`, but a browser without a session is sent to the
        /// login form (`303`) instead of getting a JSON `401`.
        case operatorPage
    }

    public struct Route: Sendable {
        public var method: String
        /// Path segments; `{name}` captures one segment.
        public var pattern: [String]
        public var access: Access
        public var handle: @Sendable (RouteCall) -> Void

        public init(_ method: String, _ path: String, _ access: Access, _ handle: @escaping @Sendable (RouteCall) -> Void) {
            self.method = method
            pattern = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            self.access = access
            self.handle = handle
        }

        /// The route's name in the access log and metrics: `PUT /api/register/{id}`.
        public var name: String { "\(method) /\(pattern.joined(separator: "/"))" }

        /// The captured segments, in order and as sent (not yet decoded), when `segments` (as
        /// sent) fits the pattern: fixed segments compare as sent, so a route has one spelling.
        func match(_ segments: [Substring]) -> [Substring]? {
            guard segments.count == pattern.count else { return nil }
            var captured: [Substring] = []
            for (p, s) in zip(pattern, segments) {
                if p.hasPrefix("{") { captured.append(s) } else if p != s { return nil }
            }
            return captured
        }
    }

    /// One request on its route: its captured segments and who made it.
    public struct RouteCall: Sendable {
        public let request: ServerRequest
        public let parameters: [String]
        public let principal: Principal?
        let exchange: HTTPExchange
        let work: DispatchQueue
        let lanes: RegistryLanes
        /// Work begun for requests: `FrontDoor.drain` waits for it before the registry closes.
        let busy: DispatchGroup

        public func respond(_ response: ServerResponse) { exchange.respond(response) }

        /// Works out the answer on the work queue (fsyncs, file reads), never on one of the
        /// server's threads. Not begun when the request was answered meanwhile (its deadline).
        public func later(_ answer: @escaping @Sendable () -> ServerResponse) {
            on(work, answer)
        }

        /// Works out the answer in one of the registry's lanes: as many as it has connections,
        /// so requests queue there instead of piling threads onto the connection's lock.
        public func inRegistryLane(_ answer: @escaping @Sendable () -> ServerResponse) {
            on(lanes.next(), answer)
        }

        /// On `queue`, unless the request has been answered (`503` at its deadline) by the time
        /// its turn comes: a change the caller was told to retry is not applied late.
        func on(_ queue: DispatchQueue, _ answer: @escaping @Sendable () -> ServerResponse) {
            queue.async(group: busy) {
                if self.exchange.isAnswered { return }
                self.exchange.respond(answer())
            }
        }

        /// Counts work that finishes later (a completion) as the request's: `drain` waits for it.
        func holding(_ body: (_ done: @escaping @Sendable () -> Void) -> Void) {
            busy.enter()
            body { [busy] in busy.leave() }
        }

        /// The caller's user name (routes with `.user` access always have one).
        public var user: String {
            if case .user(let name)? = principal { return name }
            return ""
        }
    }

    private let routes: [Route]
    private let authenticator: (any RequestAuthenticator)?
    private let metrics: HTTPMetrics
    private let log: Log
    private let work: DispatchQueue
    private let lanes: RegistryLanes
    private let trustedProxies: [AddressRange]
    private let busy = DispatchGroup()
    /// The dashboard's sessions; nil: no `http.operators_file`, every operator route refused.
    let sessions: OperatorSessions?

    /// `trustedProxies`: reverse proxies whose `X-Forwarded-For` names the client (`http.trusted_proxies`).
    /// `registryConnections`: how many requests the registry serves at once (one SQLite
    /// connection; a PostgreSQL pool's size).
    public init(routes: [Route], authenticator: (any RequestAuthenticator)?, metrics: HTTPMetrics, log: Log,
                registryConnections: Int = 1, trustedProxies: [AddressRange] = [], sessions: OperatorSessions? = nil,
                work: DispatchQueue = DispatchQueue(label: "pushspool.serve.work", attributes: .concurrent)) {
        self.sessions = sessions
        self.routes = routes
        self.authenticator = authenticator
        self.metrics = metrics
        self.log = log
        self.work = work
        lanes = RegistryLanes(count: registryConnections)
        self.trustedProxies = trustedProxies
    }

    /// Every route's name (`PUT /api/register/{id}`), in the order they are matched.
    public var routeNames: [String] { routes.map(\.name) }

    /// `HTTPServer`'s handler.
    public func handle(_ request: ServerRequest, _ exchange: HTTPExchange) {
        guard RequestPath.isASCII(request.path) else {
            exchange.route = "refused"
            return exchange.respond(.error(400, "path: must be visible ASCII (percent-encode anything else)"))
        }
        // The dashboard's pages and answers, refusals included, carry its security headers.
        if request.path == "/ui" || request.path.hasPrefix("/ui/") { exchange.addedHeaders = DashboardHeaders.all }
        // `/ui/` (a trailing slash is an empty segment, which no other route takes) is the dashboard's page.
        let segments = request.path == "/ui/" ? ["ui"] : RequestPath.segments(request.path) ?? []
        var allowed: [String] = []
        for route in routes {
            guard let captured = route.match(segments) else { continue }
            guard route.method == request.method || (route.method == "GET" && request.method == "HEAD") else {
                allowed.append(route.method)
                continue
            }
            exchange.route = route.name
            // Each captured segment decoded once and whole; the route applies the identifier rule.
            let parameters = captured.compactMap(RequestPath.decoded)
            guard parameters.count == captured.count else {
                exchange.respond(.error(400, "path: a segment is not percent-encoded UTF-8"))
                return
            }
            let (work, lanes, busy) = (work, lanes, busy)
            // At once, or from the password pool once a password is checked.
            authenticate(route.access, request) { decision in
                switch decision {
                case .refused(let refusal): exchange.respond(refusal)
                case .allowed(let principal):
                    exchange.principal = principal?.description
                    route.handle(RouteCall(request: request, parameters: parameters, principal: principal, exchange: exchange, work: work,
                                           lanes: lanes, busy: busy))
                }
            }
            return
        }
        if allowed.isEmpty {
            exchange.route = "unknown"
            exchange.respond(.error(404, "no such resource: \(Self.printable(request.path))"))
        } else {
            exchange.route = "method not allowed"
            exchange.respond(.error(405, "method \(Self.printable(request.method)) is not allowed here (allowed: \(allowed.joined(separator: ", ")))",
                                    headers: [("Allow", allowed.joined(separator: ", "))]))
        }
    }

    /// Waits, at most `seconds`, for the work begun for requests (registry writes, job files) to
    /// end: after the server stopped and before the registry closes. False when some still runs.
    public func drain(seconds: Double) -> Bool {
        busy.wait(timeout: .now() + seconds) == .success
    }

    private enum Admission: Sendable {
        case allowed(Principal?)
        case refused(ServerResponse)
    }

    /// Whether the caller may go on; `then` runs once, at once or from the password pool.
    private func authenticate(_ access: Access, _ request: ServerRequest, then: @escaping @Sendable (Admission) -> Void) {
        // Behind a trusted reverse proxy, failed logins count against the client, not the proxy
        // (worked out only for routes that log in: not for every probe of /healthz).
        var remote: String { ForwardedFor.client(remote: request.remote, header: request.header("X-Forwarded-For"), trusted: trustedProxies) }
        switch access {
        case .open:
            then(.allowed(nil))
        case .userOrService where AuthorizationHeader.isBearer(request.header("Authorization")):
            authenticate(.service, request, then: then)
        case .user, .userOrService:
            let challenge = "Basic realm=\"pushspool\", charset=\"UTF-8\""
            guard let authenticator else {
                return then(.refused(.error(401, "this server has no app users (http.users_file is not set)", headers: [("WWW-Authenticate", challenge)])))
            }
            authenticator.user(authorization: request.header("Authorization"), remote: remote) { decision in
                then(Self.admission(decision, challenge: challenge))
            }
        case .operator, .operatorPage:
            then(operatorAdmission(request, page: access == .operatorPage))
        case .service:
            let challenge = "Bearer realm=\"pushspool\""
            guard let authenticator else {
                return then(.refused(.error(401, "this server has no service tokens (http.tokens_file is not set)", headers: [("WWW-Authenticate", challenge)])))
            }
            then(Self.admission(authenticator.service(authorization: request.header("Authorization"), remote: remote), challenge: challenge))
        }
    }

    /// An operator's session from its cookie, and for a change its CSRF token. App users'
    /// Basic credentials and bearer tokens are refused (`403`) whatever they are worth
    /// elsewhere: the dashboard is for operators only. No `WWW-Authenticate: Basic` here, so a
    /// browser never offers its own password dialog for the dashboard.
    private func operatorAdmission(_ request: ServerRequest, page: Bool) -> Admission {
        guard let sessions else { return .refused(.error(404, "no such resource: the dashboard is off (http.operators_file is not set)")) }
        if request.header("Authorization") != nil {
            return .refused(.error(403, "the dashboard takes operators' sessions only (log in at /ui/login), not app users' or services' credentials"))
        }
        guard let cookie = OperatorSessions.cookie(in: request.header("Cookie")), let session = sessions.session(cookie: cookie) else {
            if page { return .refused(ServerResponse(status: 303, headers: [("Location", "/ui/login")])) }
            return .refused(.error(401, "session: log in at /ui/login (no session, or it ended)",
                                   headers: [("WWW-Authenticate", "Session realm=\"pushspool dashboard\"")]))
        }
        if request.method != "GET" && request.method != "HEAD" && !OperatorSessions.csrfMatches(request.header("X-CSRF-Token"), session) {
            return .refused(.error(403, "X-CSRF-Token: missing or not this session's token; reload the page"))
        }
        return .allowed(.operator(session.user))
    }

    private static func admission(_ decision: AuthDecision, challenge: String) -> Admission {
        switch decision {
        case .allowed(let p): .allowed(p)
        case .unauthorized(let why): .refused(.error(401, why, headers: [("WWW-Authenticate", challenge)]))
        case .throttled(let after):
            .refused(.error(429, "too many requests: try again in \(after) s", headers: [("Retry-After", String(after))]))
        case .busy(let after):
            .refused(.error(503, "too many logins are being checked: try again in \(after) s", headers: [("Retry-After", String(after))]))
        }
    }

    /// `HTTPServer`'s completion: one access log line and the metrics of the request. Never the
    /// query (a tutorial app's handle travels there), a header or a body.
    public func completed(_ c: HTTPServer.Completion) {
        metrics.record(route: c.route, code: c.status, seconds: c.seconds)
        var fields: [(LogKey, String)] = [(.method, c.method), (.route, c.route), (.status, String(c.status)),
                                          (.durationMS, String(format: "%.1f", c.seconds * 1000))]
        if let who = c.principal { fields.append((.user, who)) }
        if !c.completed { fields.append((.aborted, "true")) }
        log.info("\(c.route) \(c.status)", fields)
    }

    /// A path or method as it goes into an error message: at most 200 characters, control
    /// characters escaped.
    static func printable(_ s: String) -> String {
        let short = s.count > 200 ? String(s.prefix(200)) + "…" : s
        return String(JSONValue.string(short).encodedString.dropFirst().dropLast())
    }
}

/// Serial queues, taken in turn: registry work waits in a queue rather than on a lock (a Swift
/// `Mutex` spins before it sleeps, and 64 threads spinning on one SQLite connection cost more CPU
/// than the queries).
final class RegistryLanes: Sendable {
    private let queues: [DispatchQueue]
    private let turn = Atomic<Int>(0)

    init(count: Int) {
        queues = (0..<max(1, count)).map { DispatchQueue(label: "pushspool.serve.registry.\($0)") }
    }

    func next() -> DispatchQueue {
        queues[turn.wrappingAdd(1, ordering: .relaxed).oldValue % queues.count]
    }
}
