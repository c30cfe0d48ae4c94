import PushspoolCore

/// Everything about a send job that is decided once, before anything is sent: the payload
/// rendered per platform and language, which platforms go to direct providers (the registry
/// resolves the audience) and the hub sends (the hub resolves it: one per platform and text).
struct SendPlan: Sendable {
    struct Problem: Error, CustomStringConvertible { var description: String }

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

    /// One request to a hub (or to FCM for a topic or condition): the platform, its audience
    /// narrowed to one text's devices, the text.
    struct HubSend: Sendable {
        var platform: Platform
        var audience: Audience
        var notification: RenderedNotification
    }

    var renditions: [Platform: Rendition] = [:]
    var direct: [Platform] = []
    var hubSends: [HubSend] = []

    static func make(_ send: SendJob, routes: [Platform: ProviderState]) -> Result<SendPlan, Problem> {
        var plan = SendPlan()
        let languages = Set(send.localized.keys)
        for platform in send.platforms {
            guard let state = routes[platform] else {
                return .failure(Problem(description: "pns: no provider is configured for \(platform.rawValue)"))
            }
            var rendition: Rendition
            do {
                rendition = Rendition(standard: try PayloadRenderer.render(send.message, for: platform))
                for language in languages {
                    rendition.byLanguage[language] = try PayloadRenderer.render(send.message(in: language), for: platform)
                }
            } catch {
                return .failure(Problem(description: error.description))
            }
            plan.renditions[platform] = rendition
            // A topic or condition is one request, like a hub's tag send: the service resolves it.
            guard state.provider.resolvesTags || send.audience.serviceTarget != nil else {
                plan.direct.append(platform)
                continue
            }
            // The hub picks no text per device: one send per text, each to exactly its devices.
            for language in [nil] + languages.sorted() {
                let audience = send.audience.narrowed(to: language, among: languages)
                if let problem = state.provider.audienceProblem(audience) {
                    let which = languages.isEmpty ? "" : " (narrowed by language for localized texts: \(audience.hubTags ?? ""))"
                    return .failure(Problem(description: "tags: \(problem)\(which)"))
                }
                plan.hubSends.append(HubSend(platform: platform, audience: audience,
                                             notification: rendition.notification(for: language)))
            }
        }
        return .success(plan)
    }

    /// Targets planned at the start: matching devices of direct platforms plus every hub send.
    /// A registry that cannot count throws: its error is no audience of 0.
    func targetCount(_ send: SendJob, registry: any DeviceRegistry) throws -> Int {
        let devices = direct.isEmpty ? 0 : try registry.count(platforms: Set(direct), matching: send.audience.tagExpression)
        return devices + hubSends.count
    }
}
