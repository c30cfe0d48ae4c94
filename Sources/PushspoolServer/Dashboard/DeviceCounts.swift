import PushspoolKit
import Foundation
import PushspoolCore
import Synchronization

/// The devices page's counts: one walk of the registry (the walk `devices` lists with) per tag
/// expression, counting per app, platform, APNs environment, language and time zone (a device
/// without a zone counts in its app's `default_tz`, as `devices --by tz` does). Never a handle.
/// A walk's answer is kept for `lifetime` seconds: a page polling every two seconds does not
/// walk a million devices every two seconds.
final class DeviceCounts: Sendable {
    let registry: any DeviceRegistry
    let config: Config
    let lifetime: Double
    private let cached = Mutex<[String: (at: Double, value: JSONValue)]>([:])

    init(registry: any DeviceRegistry, config: Config, lifetime: Double = 5) {
        self.registry = registry
        self.config = config
        self.lifetime = lifetime
    }

    func json(_ expression: TagExpression?, key: String) throws -> JSONValue {
        let now = Date().timeIntervalSince1970
        if let hit = cached.withLock({ $0[key] }), now - hit.at < lifetime { return hit.value }
        var total = 0
        var apps: [String: Int] = [:], platforms: [String: Int] = [:], environments: [String: Int] = [:]
        var languages: [String: Int] = [:], zones: [String: Int] = [:]
        let config = config
        try registry.forEach(platforms: Set(Platform.allCases), apps: nil, tokenKind: nil, matching: expression) { d in
            total += 1
            apps[d.app, default: 0] += 1
            platforms[d.platform.rawValue, default: 0] += 1
            if let env = d.environment { environments[env.rawValue, default: 0] += 1 }
            languages[d.lang?.value ?? "(none)", default: 0] += 1
            zones[config.apps[d.app]?.zone(of: d.tz) ?? d.tz ?? "UTC", default: 0] += 1
            return true
        }
        func sorted(_ m: [String: Int]) -> JSONValue {
            .array(m.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(100).map {
                .object([("name", .string($0.key)), ("devices", .int(Int64($0.value)))])
            })
        }
        let value = JSONValue.object([
            ("ok", true), ("total", .int(Int64(total))), ("apps", sorted(apps)), ("platforms", sorted(platforms)),
            ("environments", sorted(environments)), ("languages", sorted(languages)), ("zones", sorted(zones)),
        ])
        cached.withLock { c in
            if c.count > 64 { c.removeAll() }
            c[key] = (now, value)
        }
        return value
    }
}
