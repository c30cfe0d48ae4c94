import Foundation
import PushspoolCore

/// How a funnel is shown, the same wherever it is (`GET /v1/jobs/{id}`'s `"funnel"`, `status ID`,
/// `results ID --funnel`): each step's count, and its rate over the step before it (sent of
/// targets, delivered of sent, received of delivered, opened of received; null when the step
/// before is 0), in total, per app and per platform.
extension Funnel {
    public var json: JSONValue {
        .object([("job", .string(job))] + Self.fields(total) + [
            ("by_app", .object(byApp.keys.sorted().map { ($0, .object(Self.fields(byApp[$0]!))) })),
            ("by_platform", .object(byPlatform.keys.sorted().map { ($0.rawValue, .object(Self.fields(byPlatform[$0]!))) })),
        ])
    }

    static func fields(_ c: Counts) -> [(String, JSONValue)] {
        [("targets", .int(Int64(c.targets))), ("sent", .int(Int64(c.sent))), ("delivered", .int(Int64(c.delivered))),
         ("received", .int(Int64(c.received))), ("opened", .int(Int64(c.opened))), ("dismissed", .int(Int64(c.dismissed))),
         ("rates", .object(c.rates.map { ($0.step, $0.rate.map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null) }))]
    }

    /// One line per total, app and platform: `targets 1000 → sent 1000 (100%) → …`.
    public var lines: [String] {
        var out = ["funnel of \(job): \(Self.line(total))"]
        for app in byApp.keys.sorted() where byApp.count > 1 || app != AppConfig.implicitID { out.append("  app \(app): \(Self.line(byApp[app]!))") }
        for p in byPlatform.keys.sorted() { out.append("  \(p.rawValue): \(Self.line(byPlatform[p]!))") }
        return out
    }

    static func line(_ c: Counts) -> String {
        let rates = Dictionary(uniqueKeysWithValues: c.rates.map { ($0.step, $0.rate) })
        func step(_ name: String, _ n: Int) -> String {
            guard let r = rates[name] ?? nil else { return "\(name) \(n)" }
            return "\(name) \(n) (\(Metrics.number((r * 1000).rounded() / 10))%)"
        }
        var s = "targets \(c.targets) → \(step("sent", c.sent)) → \(step("delivered", c.delivered)) → \(step("received", c.received)) → \(step("opened", c.opened))"
        if c.dismissed > 0 { s += "; dismissed \(c.dismissed)" }
        return s
    }
}

extension Funnel.Counts {
    /// Each step over the one before it; nil where that one is 0.
    public var rates: [(step: String, rate: Double?)] {
        func over(_ n: Int, _ d: Int) -> Double? { d > 0 ? Double(n) / Double(d) : nil }
        return [("sent", over(sent, targets)), ("delivered", over(delivered, sent)), ("received", over(received, delivered)),
                ("opened", over(opened, received))]
    }
}
