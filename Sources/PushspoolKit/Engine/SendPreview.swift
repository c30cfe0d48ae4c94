import Foundation
import PushspoolCore

/// The dry run of a send job: who it would reach now (per app and platform, from the registry;
/// APNs per environment once the config has apps) and exactly what each platform would
/// receive, rendered by the code that sends. Sends nothing. `validate --resolve` prints it;
/// the dashboard's compose page shows it.
public struct SendPreview: Sendable {
    /// One app's audience on one platform.
    public struct Reach: Sendable {
        public var app: String
        public var platform: Platform
        /// The provider route (`sandbox`, `apns-prod`, …).
        public var route: String
        /// Devices in the registry the audience matches; nil when the service resolves it
        /// (a topic, a condition, a channel).
        public var devices: Int?
        /// APNs devices per environment (only once the config has apps).
        public var environments: [APNsEnvironment: Int]?
        /// A sentence when the count is not the whole story (a hub resolves the tags, the service fans out).
        public var note: String?
        /// What `validate --resolve` prints after the route.
        public var summary: String
    }

    /// One platform's payload in one language (nil: the job's own text).
    public struct Payload: Sendable {
        public var platform: Platform
        public var language: LanguageTag?
        /// The body the service would receive, or why it cannot be rendered.
        public var body: String
        public var renderError: String?
    }

    public var reach: [Reach] = []
    public var payloads: [Payload] = []

    /// Devices reached, over every app and platform whose count is known.
    public var devices: Int { reach.reduce(0) { $0 + ($1.devices ?? 0) } }

    /// A secure push carries no text: one shape per platform, never a language's text.
    public static func make(_ send: SendJob, config: Config, registry: any DeviceRegistry) throws -> SendPreview {
        var preview = SendPreview()
        let apps = (try? send.apps.resolve(known: Set(config.apps.keys), defaultApp: config.defaultApp).get()) ?? []
        for platform in send.platforms {
            for app in apps {
                let route = config.apps[app]?.routes[platform] ?? "sandbox"
                var reach = Reach(app: app, platform: platform, route: route, devices: nil, environments: nil, note: nil, summary: "")
                if case .apnsChannel(let id) = send.audience {
                    let known = try registry.channel(app: app, id: id) != nil
                    reach.summary = "APNs fans the broadcast channel \(id) out (one request)"
                        + (known ? "" : "; the registry has no such channel for this app: the job would fail")
                    reach.note = reach.summary
                } else if let (field, value) = send.audience.serviceTarget {
                    reach.summary = "FCM resolves the \(field) \(value) (one request)"
                    reach.note = reach.summary
                } else {
                    let count = try registry.count(platforms: [platform], apps: [app], tokenKind: send.message.native.tokenKind,
                                                   matching: send.audience.tagExpression)
                    reach.devices = count
                    var environments = ""
                    if platform == .apns && config.appsSection != nil {
                        let counts = try environmentCounts(registry, app: app, send: send)
                        reach.environments = counts
                        environments = " (" + APNsEnvironment.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ") + ")"
                    }
                    if config.providerKind(route) == .azure {
                        reach.note = "the hub resolves \(send.audience.hubTags ?? "everyone") (\(count) such devices in the local registry)"
                        reach.summary = reach.note!
                    } else {
                        reach.summary = "\(count) devices\(environments)"
                    }
                }
                preview.reach.append(reach)
            }
            for language in [nil] + (send.secure ? [] : send.localized.keys.sorted()) {
                let text = language.map { send.message(in: $0) } ?? send.message
                do {
                    preview.payloads.append(Payload(platform: platform, language: language,
                                                    body: body(try PayloadRenderer.render(text, for: platform, tracking: send.tracking))))
                } catch {
                    preview.payloads.append(Payload(platform: platform, language: language, body: "cannot render: \(error.description)",
                                                    renderError: error.description))
                }
            }
        }
        return preview
    }

    /// An app's APNs audience by environment.
    static func environmentCounts(_ registry: any DeviceRegistry, app: String, send: SendJob) throws -> [APNsEnvironment: Int] {
        var counts: [APNsEnvironment: Int] = [:]
        try registry.forEach(platforms: [.apns], apps: [app], tokenKind: send.message.native.tokenKind, matching: send.audience.tagExpression) { device in
            counts[device.environment ?? .production, default: 0] += 1
            return true
        }
        return counts
    }

    /// A rendered notification as its service would receive the body.
    public static func body(_ n: RenderedNotification) -> String {
        switch n {
        case .apns(let a): return String(decoding: a.payload, as: UTF8.self)
        case .fcm(let f): return JSONValue.object([("message", f.message)]).encodedString
        case .wns(let w): return String(decoding: w.body, as: UTF8.self)
        case .web(let w): return String(decoding: w.payload, as: UTF8.self)
        case .hms(let h): return String(decoding: h.body(tokens: []), as: UTF8.self)
        case .adm(let a): return String(decoding: a.body, as: UTF8.self)
        }
    }
}
