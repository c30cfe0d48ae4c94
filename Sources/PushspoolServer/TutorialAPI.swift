import PushspoolKit
import Foundation
import PushspoolCore

/// The "notify users" tutorial's backend API, wire-compatible with its iOS, Android and Windows
/// clients (HTTP Basic, PascalCase bodies, a registration id handed out first and `410 Gone`
/// when it must be asked for again), with the tutorial's hole closed: a user sets only its own
/// `username:<user>` tag and tags under `http.client_tag_prefixes`, and changes only its own
/// devices.
///
/// A device is the user's when its tags hold `username:<user>`. Whoever holds a device's handle
/// (its push token) may move it to another user, as in the tutorial: `POST /api/register` with
/// that handle answers a fresh id, and the `PUT` moves the handle there (a phone that changes
/// hands, or whose app signs in as someone else, keeps one registration). With
/// `http.handles_move_between_users: false` such a `PUT` is refused with `409` instead.
///
/// The API serves the default app at `/api/…` and each app of the config at `/apps/{app}/api/…`
/// (an app the config does not have is `404`): registrations land in that app, a handle is
/// looked up within it, and notifications become jobs for it. Ids are global.
public struct TutorialAPI: Sendable {
    let registrations: RegistrationService
    let jobs: JobAPI
    let http: HTTPConfig
    let apps: ServedApps

    /// A route's handler, given the app the path names (nil: `/api/…`, the default app) and
    /// the path's other captured segments.
    typealias Handler = @Sendable (FrontDoor.RouteCall, _ app: String?, _ parameters: [String]) -> Void

    public init(registrations: RegistrationService, jobs: JobAPI, http: HTTPConfig, apps: ServedApps = ServedApps()) {
        self.registrations = registrations
        self.jobs = jobs
        self.http = http
        self.apps = apps
    }

    public var routes: [FrontDoor.Route] {
        let calls: [(String, String, Handler)] = [
            ("POST", "register", newID), ("PUT", "register/{id}", upsert), ("DELETE", "register/{id}", remove),
            ("POST", "notifications", notify),
        ]
        let apps = apps
        return calls.map { method, path, handle in
            FrontDoor.Route(method, "/api/\(path)", .user) { call in handle(call, nil, call.parameters) }
        } + calls.map { method, path, handle in
            FrontDoor.Route(method, "/apps/{app}/api/\(path)", .user) { call in
                let app = call.parameters[0]
                if let why = apps.problem(app) { return call.respond(.error(404, "app: \(why)")) }
                handle(call, app, Array(call.parameters.dropFirst()))
            }
        }
    }

    static func ownTag(_ user: String) -> String { "username:\(user)" }

    /// `POST /api/register?handle=H`: the id of the caller's device holding H, else a new id
    /// handed out to the caller (a device of another user holding H moves on the `PUT`). The
    /// handle is looked up in the path's app: one token in two apps is two devices.
    func newID(_ call: FrontDoor.RouteCall, app: String?, parameters: [String]) {
        guard let given = call.request.query["handle"], !given.isEmpty else {
            return call.respond(.error(400, "handle: required (the device's push token, as ?handle=…)"))
        }
        let handle = Platform.canonicalLookupHandle(given)
        let user = call.user
        call.inRegistryLane {
            do throws(RegistrationError) {
                if let device = try registrations.device(handle: handle, app: app), device.tags.contains(Self.ownTag(user)) {
                    return .json(200, .string(device.id))
                }
                return .json(200, .string(try registrations.reserveID(owner: user, now: Date())))
            } catch {
                return RegistrationAnswers.failure(error)
            }
        }
    }

    /// `PUT /api/register/{id}`, body `{"Platform", "Handle", "Tags", "Environment"?, "TokenKind"?, "TimeZone"?}`: a device of
    /// the path's app.
    func upsert(_ call: FrontDoor.RouteCall, app: String?, parameters: [String]) {
        let id = parameters[0], user = call.user
        let fields: [String: JSONValue]
        switch call.request.jsonObject(allowed: ["platform", "handle", "tags", "lang", "environment", "tokenkind", "timezone"],
                                       names: RegistrationAnswers.tutorialNames) {
        case .success(let f): fields = f
        case .failure(let refusal): return call.respond(refusal.response)
        }
        if fields["platform"]?.stringValue?.lowercased() == "mpns" {
            return call.respond(.error(400, "Platform: mpns (Windows Phone) was retired by Microsoft and is not supported; use wns"))
        }
        var tags: [JSONValue] = [.string(Self.ownTag(user))]
        if let given = fields["tags"] {
            guard case .array(let items) = given else {
                return call.respond(.error(400, "Tags: must be an array of tags, got \(given.typeName)"))
            }
            // Checked here, by the index the app gave (the list below starts with the user's own tag).
            for (i, item) in items.enumerated() {
                guard let tag = item.stringValue else {
                    return call.respond(.error(400, "Tags[\(i)]: must be a tag string, got \(item.typeName)"))
                }
                if let problem = RegistrationRules.tagProblem(tag) { return call.respond(.error(400, "Tags[\(i)]: \(problem)")) }
                if !mayTag(tag, user: user) {
                    return call.respond(.error(403, "Tags[\(i)]: \(FrontDoor.printable(tag)) is not a tag an app may set (allowed: \(allowedTags(user)))"))
                }
                if item != tags[0] { tags.append(item) }
            }
        }
        let registration: Registration
        switch RegistrationRules.registration(id: .string(id), platform: fields["platform"], handle: fields["handle"],
                                              tags: .array(tags), lang: fields["lang"], app: app.map(JSONValue.string),
                                              environment: fields["environment"], tokenKind: fields["tokenkind"], tz: fields["timezone"], names: .tutorial) {
        case .success(let r): registration = r
        case .failure(let problems): return call.respond(.error(400, problems.description))
        }
        call.inRegistryLane {
            do throws(RegistrationError) {
                let gone = ServerResponse.error(410, "Id: registration id \(FrontDoor.printable(id)) is unknown or gone; ask POST /api/register for a new one")
                if let existing = try registrations.device(id: id) {
                    // Another user's device reads as an unknown id: the answer must not tell that it exists.
                    guard existing.tags.contains(Self.ownTag(user)) else { return gone }
                } else if try registrations.reservation(id: id, now: Date()) != user {
                    // Never handed out, handed out to someone else, expired, or removed since.
                    return gone
                }
                if !http.handlesMoveBetweenUsers, let holder = try registrations.device(handle: registration.handle, app: app),
                   !holder.tags.contains(Self.ownTag(user)) {
                    return .error(409, "Handle: registered to another user's device, and this server does not move devices between users "
                                       + "(http.handles_move_between_users is false)")
                }
                let change = try registrations.register(registration, now: Date())
                if change.hubFailed { return RegistrationAnswers.hubFailure(change) }
                return ServerResponse(status: 200)
            } catch {
                return RegistrationAnswers.failure(error)
            }
        }
    }

    /// `DELETE /api/register/{id}`: one of the caller's own devices (by its id, which is global).
    func remove(_ call: FrontDoor.RouteCall, app: String?, parameters: [String]) {
        let id = parameters[0], user = call.user
        // The one identifier rule, as PUT applies it: a broken id is refused, not looked up.
        if let problem = Identifier.deviceIDProblem(id) { return call.respond(.error(400, "Id: \(problem)")) }
        call.inRegistryLane {
            do throws(RegistrationError) {
                // Another user's device reads as no device: the answer must not tell that it exists.
                guard let device = try registrations.device(id: id), device.tags.contains(Self.ownTag(user)) else {
                    return .error(404, "Id: no device \(FrontDoor.printable(id))")
                }
                guard let change = try registrations.unregister(.id(device.id), now: Date()) else {
                    return .error(404, "Id: no device \(FrontDoor.printable(id))")
                }
                if change.hubFailed { return RegistrationAnswers.hubFailure(change) }
                return ServerResponse(status: 200)
            } catch {
                return RegistrationAnswers.failure(error)
            }
        }
    }

    /// `POST /api/notifications?pns=P&to_tag=U`, body the message as a JSON string: a send job
    /// `From <caller>: <message>` to `username:U` on P, for the path's app (`"app"` in the job;
    /// none at `/api/…`, which is the default app's).
    func notify(_ call: FrontDoor.RouteCall, app: String?, parameters: [String]) {
        guard http.usersMaySend else {
            return call.respond(.error(403, "app users may not send on this server (http.users_may_send is false)"))
        }
        guard let pns = call.request.query["pns"], !pns.isEmpty else {
            return call.respond(.error(400, "pns: required (one of \(Platform.acceptedNames))"))
        }
        if pns.lowercased() == "mpns" {
            return call.respond(.error(400, "pns: mpns (Windows Phone) was retired by Microsoft and is not supported; use wns"))
        }
        guard let recipient = call.request.query["to_tag"], !recipient.isEmpty else {
            return call.respond(.error(400, "to_tag: required (the user name to notify)"))
        }
        guard case .string(let message)? = try? JSONParser.parse(call.request.body) else {
            return call.respond(.error(400, "body: must be the message as a JSON string, e.g. \"hi\""))
        }
        let id = JobIntake.newID(prefix: "notify")
        let document = JSONValue.object([("id", .string(id)), ("to_tag", .string(Self.ownTag(recipient))), ("pns", .array([.string(pns)])),
                                         ("from", .string(call.user)), ("message", .string(message))]
                                        + (app.map { [("app", JSONValue.string($0))] } ?? []))
        let bytes = document.encoded() + [0x0A]
        do {
            _ = try JobParser.parse(bytes, fileName: "\(id).json")
        } catch {
            // The job's own field names, mapped back to what this request called them.
            let first = error.problems.first.map { p -> String in
                switch p.field {
                case "to_tag": "to_tag: \(p.message)"
                case "pns", "pns[0]": "pns: \(p.message)"
                default: p.description
                }
            } ?? "invalid notification"
            return call.respond(.error(400, first))
        }
        jobs.queue(bytes, id: id, call: call) { id in .json(200, .object([("id", .string(id))])) }
    }

    private func mayTag(_ tag: String, user: String) -> Bool {
        tag == Self.ownTag(user) || http.clientTagPrefixes.contains { tag.hasPrefix($0) && tag.count > $0.count }
    }

    private func allowedTags(_ user: String) -> String {
        ([Self.ownTag(user)] + http.clientTagPrefixes.map { "\($0)…" }).joined(separator: ", ")
    }
}
