import PushspoolKit
import Dispatch
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The registry for services (bearer tokens): register, unregister, show, list and count devices,
/// as `register`, `unregister` and `devices` do on the host. Services set any tags, and name a
/// device's app and (APNs) environment; ids are global, so removing and showing need no app. For a
/// platform routed to a hub, the answer comes once the registry has the change; the hub's copy
/// follows in the background (`HubQueue`), and `GET /v1/devices/{id}` says whether it has yet.
public struct DeviceAPI: Sendable {
    let registrations: RegistrationService
    let registry: any DeviceRegistry
    let apps: ServedApps

    public init(registrations: RegistrationService, registry: any DeviceRegistry, apps: ServedApps = ServedApps()) {
        self.registrations = registrations
        self.registry = registry
        self.apps = apps
    }

    public var routes: [FrontDoor.Route] {
        [
            .init("PUT", "/v1/devices/{id}", .service, upsert),
            .init("DELETE", "/v1/devices/{id}", .service, remove),
            .init("GET", "/v1/devices/{id}", .service, show),
            .init("GET", "/v1/devices", .service, list),
        ]
    }

    /// `PUT /v1/devices/{id}`, body `{"platform", "handle", "tags", "lang"?, "app"?, "environment"?, "token_kind"?, "tz"?}`.
    func upsert(_ call: FrontDoor.RouteCall) {
        let fields: [String: JSONValue]
        switch call.request.jsonObject(allowed: ["platform", "handle", "tags", "lang", "app", "environment", "token_kind", "tz"]) {
        case .success(let f): fields = f
        case .failure(let refusal): return call.respond(refusal.response)
        }
        let registration: Registration
        switch RegistrationRules.registration(id: .string(call.parameters[0]), platform: fields["platform"], handle: fields["handle"],
                                              tags: fields["tags"], lang: fields["lang"], app: fields["app"], environment: fields["environment"],
                                              tokenKind: fields["token_kind"], tz: fields["tz"]) {
        case .success(let r): registration = r
        case .failure(let problems): return call.respond(.error(400, problems.description))
        }
        if let app = registration.app, let why = apps.problem(app) { return call.respond(.error(400, "app: \(why)")) }
        let apps = apps
        call.inRegistryLane {
            do throws(RegistrationError) {
                let change = try registrations.register(registration, now: Date())
                if change.hubFailed { return RegistrationAnswers.hubFailure(change) }
                var pairs = apps.listing(change.device)
                pairs.append(("moved_from", change.movedFrom.map(JSONValue.string) ?? .null))
                if change.hubPending { pairs.append(("hub", "pending")) }
                return .json(200, .object(pairs))
            } catch {
                return RegistrationAnswers.failure(error)
            }
        }
    }

    /// `GET /v1/devices/{id}`: the device as listings show it, and for a hub-routed platform
    /// `"hub": "written"` once the hub has the registry's last change of it, else `"pending"`
    /// (with `hub_error`, the last failed attempt's reason, while it is being retried).
    func show(_ call: FrontDoor.RouteCall) {
        let id = call.parameters[0]
        if let problem = Identifier.deviceIDProblem(id) { return call.respond(.error(400, "id: \(problem)")) }
        let apps = apps
        call.inRegistryLane {
            do throws(RegistrationError) {
                guard let device = try registrations.device(id: id) else {
                    return .error(404, "id: no device \(FrontDoor.printable(id))")
                }
                var pairs = apps.listing(device)
                if let queue = registrations.hubQueue, queue.serves(device.platform) {
                    switch queue.status(of: device.id) {
                    case .written:
                        pairs.append(("hub", "written"))
                    case .pending(let lastError):
                        pairs.append(("hub", "pending"))
                        if let lastError { pairs.append(("hub_error", .string(lastError))) }
                    }
                } else if registrations.hub?.serves(device.platform) == true {
                    pairs.append(("hub", "written"))
                }
                return .json(200, .object(pairs))
            } catch {
                return RegistrationAnswers.failure(error)
            }
        }
    }

    /// `DELETE /v1/devices/{id}`.
    func remove(_ call: FrontDoor.RouteCall) {
        let target: Unregistration
        switch RegistrationRules.unregistration(id: .string(call.parameters[0]), handle: nil) {
        case .success(let t): target = t
        case .failure(let problems): return call.respond(.error(400, problems.description))
        }
        call.inRegistryLane {
            do throws(RegistrationError) {
                guard let change = try registrations.unregister(target, now: Date()) else {
                    return .error(404, "id: no device \(FrontDoor.printable(call.parameters[0]))")
                }
                if change.hubFailed { return RegistrationAnswers.hubFailure(change) }
                return .json(200, .object([("id", .string(change.device.id)), ("removed", true)]))
            } catch {
                return RegistrationAnswers.failure(error)
            }
        }
    }

    /// `GET /v1/devices?tags=EXPR&platform=apns,fcm&app=chat,shop&count=1`: the count, or the devices as JSON
    /// Lines (handles left out, as `pushspool devices` does), streamed through a pipe a page at
    /// a time: a million devices in bounded memory, and a client that stops reading stops the query.
    func list(_ call: FrontDoor.RouteCall) {
        var expression: TagExpression?
        if let text = call.request.query["tags"], !text.isEmpty {
            do { expression = try TagExpression.parse(text) } catch {
                return call.respond(.error(400, "tags: \(error.description)"))
            }
        }
        var platforms = Set(Platform.allCases)
        if let names = call.request.query["platform"], !names.isEmpty {
            platforms = []
            for name in names.split(separator: ",") {
                guard let p = Platform(name: String(name)) else {
                    return call.respond(.error(400, "platform: unknown platform \(FrontDoor.printable(String(name))) (expected \(Platform.acceptedNames))"))
                }
                platforms.insert(p)
            }
        }
        // Like `platform`, a comma list (`pushspool devices --app` takes the flag once per app).
        var appSet: Set<String>?
        if let names = call.request.query["app"], !names.isEmpty {
            appSet = []
            for name in names.split(separator: ",").map(String.init) {
                if let why = apps.problem(name) { return call.respond(.error(400, "app: \(why)")) }
                appSet?.insert(name)
            }
        }
        let counting = ["1", "true", "yes"].contains(call.request.query["count"] ?? "")
        let registry = registry
        let platformSet = platforms, selected = appSet, apps = apps
        let matching = expression
        if counting {
            return call.inRegistryLane {
                do throws(RegistryError) {
                    let count = try registry.count(platforms: platformSet, apps: selected, matching: matching)
                    return .json(200, .object([("count", .int(Int64(count)))]))
                } catch {
                    return RegistrationAnswers.failure(RegistrationError(error))
                }
            }
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            return call.respond(.error(503, "cannot list devices now: \(String(cString: strerror(errno)))", headers: [("Retry-After", "5")]))
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        call.respond(ServerResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: .pipe(fd: ends[0])))
        let writer = ends[1]
        call.holding { done in DispatchQueue.global(qos: .utility).async {
            defer { close(writer); done() }
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 16)
            func flush() -> Bool {
                defer { buffer.removeAll(keepingCapacity: true) }
                do { try FileIO.writeAll(writer, buffer); return true } catch { return false }   // the client went away
            }
            do {
                try registry.forEach(platforms: platformSet, apps: selected, matching: matching) { device in
                    buffer += JSONValue.object(apps.listing(device)).encoded()
                    buffer.append(0x0A)
                    return buffer.count < 60_000 || flush()
                }
                _ = flush()
            } catch {
                // The stream has begun with 200: the listing ends early, with a last line saying why.
                buffer += JSONValue.object([("error", .string("the listing stopped: the registry failed"))]).encoded() + [0x0A]
                _ = flush()
            }
        } }
    }
}

extension Device {
    /// A device as listings show it (`pushspool devices`, `GET /v1/devices`): never its handle,
    /// which is a delivery credential of a sort; a web subscription shows its push service's
    /// origin only (its path and keys are the credential).
    public var listing: [(String, JSONValue)] {
        let endpoint: [(String, JSONValue)] = platform == .web
            ? [("endpoint", .string(((try? WebPushSubscription.parse(text: handle))?.origin ?? "") + "…"))] : []
        return [("id", .string(id)), ("platform", .string(platform.rawValue))] + endpoint
            + [("tags", .array(tags.map(JSONValue.string)))] + (lang.map { [("lang", .string($0.value))] } ?? [])
            + (tz.map { [("tz", .string($0))] } ?? [])
            + [("updated_at", .string(Timestamp.rfc3339(updatedAt)))]
    }
}
