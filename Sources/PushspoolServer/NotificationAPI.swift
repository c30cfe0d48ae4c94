import PushspoolKit
import Foundation
import PushspoolCore

/// What apps and their backends say back about a push: the secure content an app fetches with
/// its user's credentials (the tutorial's "Secure Push"), and the events it reports (received,
/// opened, dismissed). The desk decides; these routes only read requests and write answers.
///
/// - Indistinguishable misses: every id of the right shape goes to the desk, which does the same
///   work for an unknown, a forged and another user's id, and all three get
///   `NotificationAnswers.notFound`, one value. An id of the wrong shape (`NotificationIDShape`)
///   is refused `400` before: the rule is public, so that answer tells nothing about any id.
/// - Tutorial routes (`/api/…`, Basic) also answer under `/apps/{app}/api/…` like the rest of the
///   tutorial's API; ids are global, the app in the path is only checked to exist.
public struct NotificationAPI: Sendable {
    let desk: any NotificationDesk
    let apps: ServedApps
    let now: @Sendable () -> Date

    public init(desk: any NotificationDesk, apps: ServedApps = ServedApps(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.desk = desk
        self.apps = apps
        self.now = now
    }

    /// The body `POST /v1/events` may have (`HTTPServer.Limits.largerBodies`): 1,000 events with
    /// an `at` with milliseconds and an offset each, and room for spaces.
    public static let maxBatchBody = 256 << 10

    public var routes: [FrontDoor.Route] {
        let tutorial: [(String, String, @Sendable (FrontDoor.RouteCall, String) -> Void)] = [
            ("GET", "notifications/{id}", fetchTutorial), ("POST", "notifications/{id}/events", report),
        ]
        let apps = apps
        return tutorial.map { method, path, handle in
            FrontDoor.Route(method, "/api/\(path)", .user) { call in handle(call, call.parameters[0]) }
        } + tutorial.map { method, path, handle in
            FrontDoor.Route(method, "/apps/{app}/api/\(path)", .user) { call in
                if let why = apps.problem(call.parameters[0]) { return call.respond(.error(404, "app: \(why)")) }
                handle(call, call.parameters[1])
            }
        } + [
            FrontDoor.Route("GET", "/v1/notifications/{id}", .userOrService) { call in fetchFull(call, id: call.parameters[0]) },
            FrontDoor.Route("POST", "/v1/events", .service, reportBatch),
        ]
    }

    /// The caller as the desk knows it: an app user's name, nil for a service (trusted with any id).
    static func user(_ call: FrontDoor.RouteCall) -> String? {
        if case .user(let name)? = call.principal { return name }
        return nil
    }

    /// `GET /api/notifications/{id}`: the tutorial's `{"Id", "Payload", "Read"}`.
    func fetchTutorial(_ call: FrontDoor.RouteCall, id: String) {
        fetch(call, id: id, answer: NotificationAnswers.tutorial)
    }

    /// `GET /v1/notifications/{id}` (Basic or bearer): the whole content.
    func fetchFull(_ call: FrontDoor.RouteCall, id: String) {
        fetch(call, id: id, answer: NotificationAnswers.full)
    }

    private func fetch(_ call: FrontDoor.RouteCall, id: String, answer: @escaping @Sendable (NotificationFetch) -> ServerResponse) {
        // A fetch counts as `received` and turns `Read` true: HEAD, which must change nothing, is refused.
        guard call.request.method == "GET" else {
            return call.respond(.error(405, "method HEAD is not allowed here: a fetch counts as received (allowed: GET)", headers: [("Allow", "GET")]))
        }
        if let problem = NotificationIDShape.problem(id) { return call.respond(.error(400, "id: \(problem)")) }
        let (desk, now, user) = (desk, now, Self.user(call))
        call.inRegistryLane { answer(desk.fetch(id: id, user: user, now: now())) }
    }

    /// `POST /api/notifications/{id}/events`, body `{"type"}`: one event of the caller's notification.
    func report(_ call: FrontDoor.RouteCall, id: String) {
        let event: NotificationEvent
        switch EventReports.single(id: id, body: call.request.body) {
        case .success(let e): event = e
        case .failure(let refusal): return call.respond(refusal.response)
        }
        let (desk, now, user) = (desk, now, Self.user(call))
        call.inRegistryLane {
            let statuses = desk.record([event], user: user, now: now())
            guard let status = statuses.first, statuses.count == 1 else { return NotificationAnswers.batch([event], statuses) }
            return NotificationAnswers.single(event, status)
        }
    }

    /// `POST /v1/events` (bearer), body `[{"id", "type", "at"?}]`: a status per event, in order.
    func reportBatch(_ call: FrontDoor.RouteCall) {
        let events: [NotificationEvent]
        switch EventReports.batch(call.request.body) {
        case .success(let e): events = e
        case .failure(let refusal): return call.respond(refusal.response)
        }
        if events.isEmpty { return call.respond(.json(200, .array([]))) }
        let (desk, now) = (desk, now)
        call.inRegistryLane { NotificationAnswers.batch(events, desk.record(events, user: nil, now: now())) }
    }
}
