import PushspoolCore

/// Everything about a send job that is decided once, before anything is sent: the payload
/// rendered per platform, and which platforms go to direct providers (the registry resolves the
/// audience) or to a hub (the hub resolves it).
struct SendPlan: Sendable {
    struct Problem: Error, CustomStringConvertible { var description: String }

    var rendered: [Platform: RenderedNotification] = [:]
    var direct: [Platform] = []
    var hub: [Platform] = []

    static func make(_ send: SendJob, routes: [Platform: ProviderState]) -> Result<SendPlan, Problem> {
        var plan = SendPlan()
        for platform in send.platforms {
            guard let state = routes[platform] else {
                return .failure(Problem(description: "pns: no provider is configured for \(platform.rawValue)"))
            }
            do {
                plan.rendered[platform] = try PayloadRenderer.render(send.message, for: platform)
            } catch {
                return .failure(Problem(description: error.description))
            }
            if state.provider.resolvesTags {
                if let problem = state.provider.audienceProblem(send.audience) {
                    return .failure(Problem(description: "tags: \(problem)"))
                }
                plan.hub.append(platform)
            } else {
                plan.direct.append(platform)
            }
        }
        return .success(plan)
    }

    /// Targets planned at the start: matching devices of direct platforms plus one per hub platform.
    func targetCount(_ send: SendJob, registry: Registry) -> Int {
        let devices = direct.isEmpty ? 0 : ((try? registry.count(platforms: Set(direct), matching: send.audience.tagExpression)) ?? 0)
        return devices + hub.count
    }
}
