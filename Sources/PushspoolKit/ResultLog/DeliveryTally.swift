import Foundation
import PushspoolCore

/// A result log's final outcomes counted per app and platform, as `ResultLogContents` reads
/// them (the same lines, counted in the same pass): the first steps of a job's funnel.
public struct DeliveryTally: Sendable, Equatable {
    public struct Route: Sendable, Hashable {
        public var app: String
        public var platform: Platform

        public init(app: String, platform: Platform) {
            self.app = app
            self.platform = platform
        }
    }

    public struct Counts: Sendable, Equatable {
        public var delivered = 0, failed = 0, unregistered = 0, capped = 0

        public init() {}

        /// Targets with a final outcome.
        public var finished: Int { delivered + failed + unregistered + capped }
        /// Handed to the service (a capped target never is).
        public var sent: Int { delivered + failed + unregistered }
    }

    public var routes: [Route: Counts] = [:]
    /// The targets the job line planned (nil: not known).
    public var targets: Int?

    public init() {}

    /// Lines written before apps name none: theirs is `defaultApp`.
    mutating func count(_ d: ResultRecord.Delivery, defaultApp: String = AppConfig.implicitID) {
        count(app: d.app, platform: d.platform, status: d.status, defaultApp: defaultApp)
    }

    mutating func count(app: String?, platform: Platform, status: DeliveryStatus, defaultApp: String = AppConfig.implicitID) {
        var one = Counts()
        switch status {
        case .delivered: one.delivered = 1
        case .failed: one.failed = 1
        case .unregistered: one.unregistered = 1
        case .capped: one.capped = 1
        }
        add(one, app: app, platform: platform, defaultApp: defaultApp)
    }

    /// Outcomes counted elsewhere (a reader that tallies a batch of lines first) added to a route's.
    mutating func add(_ counts: Counts, app: String?, platform: Platform, defaultApp: String = AppConfig.implicitID) {
        let route = Route(app: app ?? defaultApp, platform: platform)
        var c = routes[route] ?? Counts()
        c.delivered += counts.delivered
        c.failed += counts.failed
        c.unregistered += counts.unregistered
        c.capped += counts.capped
        routes[route] = c
    }

    /// As stored in the registry: `{"targets", "routes": [{"app","platform","delivered","failed","unregistered","capped"}]}`.
    public var json: JSONValue {
        .object([("targets", targets.map { .int(Int64($0)) } ?? .null), ("routes", routesJSON)])
    }

    private var routesJSON: JSONValue {
        .array(routes.keys.sorted { ($0.app, $0.platform) < ($1.app, $1.platform) }.map { r in
            let c = routes[r]!
            return .object([("app", .string(r.app)), ("platform", .string(r.platform.rawValue)), ("delivered", .int(Int64(c.delivered))),
                            ("failed", .int(Int64(c.failed))), ("unregistered", .int(Int64(c.unregistered))), ("capped", .int(Int64(c.capped)))])
        })
    }

    public init?(json: JSONValue) {
        guard case .array(let items)? = json["routes"] else { return nil }
        if case .int(let n)? = json["targets"] { targets = Int(n) }
        for item in items {
            guard let app = item["app"]?.stringValue, let platform = item["platform"]?.stringValue.flatMap(Platform.init(rawValue:)) else { return nil }
            func n(_ k: String) -> Int { if case .int(let v)? = item[k] { Int(v) } else { 0 } }
            var c = Counts()
            (c.delivered, c.failed, c.unregistered, c.capped) = (n("delivered"), n("failed"), n("unregistered"), n("capped"))
            routes[Route(app: app, platform: platform)] = c
        }
    }
}
