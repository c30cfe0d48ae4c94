import Foundation
import PushspoolCore

/// One provider of a running dispatcher as that dispatcher reports it in its presence record
/// (`DispatcherPresence`): connections open, requests in flight, its recent failed answers and
/// their totals by code. `status --json`'s `providers` and the dashboard's System page are
/// `merged` from every responding dispatcher's, by this one type.
public struct ProviderRuntime: Sendable, Equatable {
    public var name: String
    public var connections: Int
    public var inFlight: Int
    /// Newest first.
    public var recentErrors: [RecentError]
    public var errorTotals: [String: Int]

    public init(name: String, connections: Int, inFlight: Int, recentErrors: [RecentError], errorTotals: [String: Int]) {
        self.name = name
        self.connections = connections
        self.inFlight = inFlight
        self.recentErrors = recentErrors
        self.errorTotals = errorTotals
    }

    /// As the record holds it and `status --json` shows it (times in RFC 3339).
    public func json() -> JSONValue {
        .object([
            ("provider", .string(name)),
            ("connections", .int(Int64(connections))),
            ("in_flight", .int(Int64(inFlight))),
            ("errors_total", .object(errorTotals.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("recent_errors", .array(recentErrors.map { e in
                .object([("at", .string(Timestamp.rfc3339(Date(timeIntervalSince1970: e.at)))), ("code", .string(e.code)),
                         ("reason", e.reason.map(JSONValue.string) ?? .null), ("count", .int(Int64(e.count))),
                         ("meaning", .string(e.meaning))])
            })),
        ])
    }

    /// Reads what `json()` wrote; nil when it is not such an entry.
    public init?(json v: JSONValue) {
        guard let name = v["provider"]?.stringValue, case .int(let connections)? = v["connections"],
              case .int(let inFlight)? = v["in_flight"] else { return nil }
        var totals: [String: Int] = [:]
        if case .object(let pairs)? = v["errors_total"] {
            for (code, n) in pairs { if case .int(let n) = n { totals[code] = Int(n) } }
        }
        var errors: [RecentError] = []
        if case .array(let items)? = v["recent_errors"] {
            for e in items {
                guard let at = e["at"]?.stringValue.flatMap(Timestamp.parse), let code = e["code"]?.stringValue,
                      let meaning = e["meaning"]?.stringValue, case .int(let count)? = e["count"] else { continue }
                errors.append(RecentError(at: at.timeIntervalSince1970, code: code, reason: e["reason"]?.stringValue,
                                          meaning: meaning, count: Int(count)))
            }
        }
        self.init(name: name, connections: Int(connections), inFlight: Int(inFlight), recentErrors: errors, errorTotals: totals)
    }

    /// The providers of several dispatchers as one list, by name: connections and requests
    /// summed, totals added, recent errors interleaved newest first and cut to `keep`.
    public static func merged(_ all: [ProviderRuntime], keep: Int = 20) -> [ProviderRuntime] {
        var byName: [String: ProviderRuntime] = [:]
        for p in all {
            guard var sum = byName[p.name] else {
                byName[p.name] = p
                continue
            }
            sum.connections += p.connections
            sum.inFlight += p.inFlight
            sum.recentErrors += p.recentErrors
            sum.errorTotals.merge(p.errorTotals, uniquingKeysWith: +)
            byName[p.name] = sum
        }
        return byName.values.sorted { $0.name < $1.name }.map { p in
            var p = p
            p.recentErrors = Array(p.recentErrors.sorted { $0.at > $1.at }.prefix(keep))
            return p
        }
    }

    /// `provider fcm: 1 connection, 0 in flight, 30 failed answers, the last 12 s ago: 400 INVALID_ARGUMENT (×10 in a row)`
    public func line(now: Date) -> String {
        var line = "provider \(name): \(connections == 1 ? "1 connection" : "\(connections) connections"), \(inFlight) in flight"
        let failed = errorTotals.values.reduce(0, +)
        guard let e = recentErrors.first else { return line + ", no failed answers" }
        let age = max(0, Int(now.timeIntervalSince1970 - e.at))
        line += ", \(failed == 1 ? "1 failed answer" : "\(failed) failed answers"), the last \(age) s ago: \(e.code)"
        if let reason = e.reason { line += " \(reason)" }
        if e.count > 1 { line += " (×\(e.count) in a row)" }
        return line
    }
}
