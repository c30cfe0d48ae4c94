import PushspoolKit
import PushspoolCore

/// A job's funnel as `GET /v1/jobs/{id}` shows it under `"funnel"`: the counts, the rates, and the
/// same per app and per platform.
///
/// Rates are shares, rounded to 4 places, null when nothing reached the stage they divide by:
/// `sent` of targets, `delivered` of sent, and what devices report (`received`, `opened`,
/// `dismissed`) of delivered, as campaign tools quote an open rate.
enum FunnelJSON {
    static func value(_ funnel: Funnel) -> JSONValue {
        var pairs = counts(funnel.total)
        pairs.append(("apps", .object(funnel.byApp.sorted { $0.key < $1.key }.map { ($0.key, .object(counts($0.value))) })))
        pairs.append(("platforms", .object(funnel.byPlatform.sorted { $0.key < $1.key }.map { ($0.key.rawValue, .object(counts($0.value))) })))
        return .object(pairs)
    }

    private static func counts(_ c: Funnel.Counts) -> [(String, JSONValue)] {
        [
            ("targets", .int(Int64(c.targets))), ("sent", .int(Int64(c.sent))), ("delivered", .int(Int64(c.delivered))),
            ("received", .int(Int64(c.received))), ("opened", .int(Int64(c.opened))), ("dismissed", .int(Int64(c.dismissed))),
            ("rates", .object([
                ("sent", rate(c.sent, of: c.targets)), ("delivered", rate(c.delivered, of: c.sent)),
                ("received", rate(c.received, of: c.delivered)), ("opened", rate(c.opened, of: c.delivered)),
                ("dismissed", rate(c.dismissed, of: c.delivered)),
            ])),
        ]
    }

    static func rate(_ part: Int, of whole: Int) -> JSONValue {
        guard whole > 0 else { return .null }
        return .double((Double(part) / Double(whole) * 10_000).rounded() / 10_000)
    }
}
