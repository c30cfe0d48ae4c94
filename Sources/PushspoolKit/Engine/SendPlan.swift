import Foundation
import PushspoolCore

/// Everything about a send job that is decided once, before anything is sent: the payload
/// rendered per platform and language, which platforms go to direct providers (the registry
/// resolves the audience) and the hub sends (the hub resolves it: one per platform and text).
struct SendPlan: Sendable {
    struct Problem: Error, CustomStringConvertible {
        var description: String
        /// The registry could not be reached: the job waits and is tried again, not failed.
        var retry = false
    }

    /// One platform's notification in the job's default text and in each `localized` language.
    struct Rendition: Sendable {
        var standard: RenderedNotification
        var byLanguage: [LanguageTag: RenderedNotification] = [:]

        /// The device's text: its language's best match among the job's, else the default.
        func notification(for language: LanguageTag?) -> RenderedNotification {
            guard let language, !byLanguage.isEmpty,
                  let match = language.bestMatch(in: Set(byLanguage.keys)) else { return standard }
            return byLanguage[match] ?? standard
        }
    }

    /// One request to a hub (or to FCM for a topic or condition): the app whose route it is, the
    /// platform, its audience narrowed to one text's devices, the text.
    struct HubSend: Sendable {
        var app: String
        var state: ProviderState
        var platform: Platform
        var audience: Audience
        var notification: RenderedNotification
    }

    var renditions: [Platform: Rendition] = [:]
    /// The platforms any app of the job sends through a direct provider (the registry resolves
    /// the audience), and each app's own.
    var direct: [Platform] = []
    var directByApp: [String: Set<Platform>] = [:]
    var hubSends: [HubSend] = []
    /// A tracked job's ids (`secure`, `track`, an app's `track`): each device's push is stamped
    /// with its own as it is sent; nil: untracked.
    var tagger: NotificationTagger?
    /// How the renditions carry ids (each has its id's place when not `.off`).
    var tracking = NotificationTracking.off

    /// Every app of the config sends the job's direct platforms directly (a job for `"*"`, or any
    /// job of a config with one app): the registry's stream then needs no `app` condition (a
    /// device of an app the config no longer has finds no route and is passed over).
    var everyApp = false

    /// The apps of the job (`app`) with a direct route, for the registry query; nil: every app.
    var directApps: Set<String>? { everyApp ? nil : Set(directByApp.keys) }

    /// Whether `device` goes to a direct provider in this job (its app and platform). Every
    /// device the registry streams does when the job's apps share their direct platforms
    /// (`uniform`: the run asks this only otherwise).
    func sendsDirect(_ device: Device) -> Bool { directByApp[device.app]?.contains(device.platform) == true }

    /// Every app of the job sends the same platforms directly.
    var uniform: Bool { Set(directByApp.values).count <= 1 }

    static func make(_ send: SendJob, routes: [Platform: ProviderState]) -> Result<SendPlan, Problem> {
        make(send, apps: AppRoutes(routes))
    }

    /// Every app the job names (`app`: one, several, `*`; absent: the default app) with its own
    /// routes: a platform one app sends directly and another through its hub is both.
    static func make(_ send: SendJob, apps: AppRoutes, tracking: NotificationTracking? = nil) -> Result<SendPlan, Problem> {
        var plan = SendPlan()
        let tracking = tracking ?? send.tracking
        plan.tracking = tracking
        let ids: [String]
        switch send.apps.resolve(known: Set(apps.apps.keys), defaultApp: apps.defaultApp) {
        case .success(let resolved): ids = resolved
        case .failure(let problem): return .failure(Problem(description: problem.description))
        }
        let languages = Set(send.localized.keys)
        for platform in send.platforms {
            var rendition: Rendition
            do {
                rendition = Rendition(standard: try PayloadRenderer.render(send.message, for: platform, tracking: tracking))
                // A secure push carries no text: one rendition serves every language.
                if case .secure = tracking {} else {
                    for language in languages {
                        rendition.byLanguage[language] = try PayloadRenderer.render(send.message(in: language), for: platform, tracking: tracking)
                    }
                }
            } catch {
                return .failure(Problem(description: error.description))
            }
            plan.renditions[platform] = rendition
            for app in ids {
                guard let state = apps.state(app: app, platform: platform) else {
                    let which = apps.apps.count > 1 ? " (app \(app))" : ""
                    return .failure(Problem(description: "pns: no provider is configured for \(platform.rawValue)\(which)"))
                }
                // A topic or condition is one request, like a hub's tag send: the service resolves it.
                guard state.provider.resolvesTags || send.audience.serviceTarget != nil else {
                    plan.directByApp[app, default: []].insert(platform)
                    if !plan.direct.contains(platform) { plan.direct.append(platform) }
                    continue
                }
                // The hub picks no text per device: one send per text, each to exactly its devices
                // (a secure push has no text: one send, whose content each device fetches).
                let texts: Set<LanguageTag> = if case .secure = tracking { [] } else { languages }
                for language in [nil] + texts.sorted() {
                    let audience = send.audience.narrowed(to: language, among: texts)
                    if let problem = state.provider.audienceProblem(audience) {
                        let which = languages.isEmpty ? "" : " (narrowed by language for localized texts: \(audience.hubTags ?? ""))"
                        return .failure(Problem(description: "tags: \(problem)\(which)"))
                    }
                    plan.hubSends.append(HubSend(app: app, state: state, platform: platform, audience: audience,
                                                 notification: rendition.notification(for: language)))
                }
            }
        }
        plan.everyApp = Set(ids) == Set(apps.apps.keys) && plan.directByApp.count == ids.count && plan.uniform
        // Each device's own clock needs each device: a hub resolves its audience itself.
        if send.localDelivery != nil, let hub = plan.hubSends.first {
            return .failure(Problem(description: "local_time: \(hub.platform.rawValue) goes to provider \(hub.state.name), which resolves its own audience, so no device's clock can be known (send local_time jobs to platforms sent directly)"))
        }
        return .success(plan)
    }

    /// The plan of a job about to send (`make`), tracked when the job or one of its apps says
    /// so: the job is then recorded in the registry and its hub sends carry their ids.
    static func prepare(_ job: Job, _ send: SendJob, env: JobRunner.Environment, now: Date? = nil) -> Result<SendPlan, Problem> {
        let ids: [String]
        switch send.apps.resolve(known: Set(env.apps.apps.keys), defaultApp: env.apps.defaultApp) {
        case .success(let resolved): ids = resolved
        case .failure(let problem): return .failure(Problem(description: problem.description))
        }
        let tracking = NotificationTagger.tracking(send, apps: ids, configs: env.appConfigs)
        guard case .success(var plan) = make(send, apps: env.apps, tracking: tracking) else { return make(send, apps: env.apps) }
        guard tracking != .off else { return .success(plan) }
        do {
            let tagger = try NotificationTagger.make(job, send, apps: ids, registry: env.registry, now: now ?? env.clock.wall())
            plan.tagger = tagger
            for i in plan.hubSends.indices {
                plan.hubSends[i].notification = plan.hubSends[i].notification.stamped(tagger.hubID(plan.hubSends[i].platform))
            }
        } catch {
            return .failure(Problem(description: "registry: the job's notification ids could not be set up: \(error.message)", retry: true))
        }
        return .success(plan)
    }

    /// A broadcast channel job goes only to a channel the registry knows for each app it is
    /// sent for (created with `pushspool apns channels create`, or found by `list --refresh`):
    /// Apple would answer an unknown one with a 400 after the job was accepted.
    func channelProblem(_ send: SendJob, registry: any DeviceRegistry) throws(RegistryError) -> String? {
        guard case .apnsChannel(let id) = send.audience else { return nil }
        for hub in hubSends where hub.platform == .apns {
            guard try registry.channel(app: hub.app, id: id) == nil else { continue }
            return "apns_channel: app \(hub.app) has no channel \(id) in the registry "
                + "(pushspool apns channels create --app \(hub.app), or list --app \(hub.app) --refresh)"
        }
        return nil
    }

    /// Targets planned at the start: matching devices of direct routes (counted per set of apps
    /// sharing the same direct platforms) plus every hub send. A registry that cannot count
    /// throws: its error is no audience of 0.
    func targetCount(_ send: SendJob, registry: any DeviceRegistry) throws -> Int {
        var groups: [Set<Platform>: Set<String>] = [:]
        for (app, platforms) in directByApp { groups[platforms, default: []].insert(app) }
        var devices = 0
        for (platforms, apps) in groups {
            devices += try registry.count(platforms: platforms, apps: apps, tokenKind: send.message.native.tokenKind,
                                      matching: send.audience.tagExpression)
        }
        return devices + hubSends.count
    }
}
