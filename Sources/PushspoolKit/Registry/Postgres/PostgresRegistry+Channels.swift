import Foundation
import PushspoolCore

/// Broadcast channels in the PostgreSQL registry (`apns_channels`, schema 4).
extension PostgresRegistry {
    static let channelColumns = "id, app, environment, storage_policy, created_at"

    public func saveChannel(_ channel: APNsChannel) throws(RegistryError) {
        try run { c in
            try c.query("""
                INSERT INTO apns_channels(\(Self.channelColumns)) VALUES($1, $2, $3, $4::integer, $5::float8)
                ON CONFLICT (app, id) DO UPDATE SET environment = excluded.environment,
                    storage_policy = excluded.storage_policy, created_at = excluded.created_at
                """, Self.values(of: channel))
        }
    }

    @discardableResult
    public func removeChannel(app: String, id: String) throws(RegistryError) -> Bool {
        try run { c in
            try c.query("DELETE FROM apns_channels WHERE app = $1 AND id = $2 RETURNING id", [app, id]).count > 0
        }
    }

    public func channels(app: String) throws(RegistryError) -> [APNsChannel] {
        try run { c in try Self.channels(c, where: "app = $1 ORDER BY created_at, id", [app]) }
    }

    public func channel(app: String, id: String) throws(RegistryError) -> APNsChannel? {
        try run { c in try Self.channels(c, where: "app = $1 AND id = $2", [app, id]).first }
    }

    public func replaceChannels(app: String, environment: APNsEnvironment, with channels: [APNsChannel]) throws(RegistryError) {
        try transaction { c in
            let known = Set(try Self.channels(c, where: "app = $1 AND environment = $2", [app, environment.rawValue]).map(\.id))
            let listed = Set(channels.map(\.id))
            for id in known.subtracting(listed) { try c.query("DELETE FROM apns_channels WHERE app = $1 AND id = $2", [app, id]) }
            for channel in channels where !known.contains(channel.id) {
                try c.query("INSERT INTO apns_channels(\(Self.channelColumns)) VALUES($1, $2, $3, $4::integer, $5::float8)",
                            Self.values(of: channel))
            }
        }
    }

    private static func channels(_ c: PostgresConnection, where condition: String, _ values: [String?]) throws -> [APNsChannel] {
        let rows = try c.query("SELECT \(channelColumns) FROM apns_channels WHERE \(condition)", values)
        return (0..<rows.count).map { i in
            APNsChannel(id: rows.text(i, 0) ?? "", app: rows.text(i, 1) ?? "",
                        environment: rows.text(i, 2).flatMap(APNsEnvironment.init(name:)) ?? .production,
                        storagePolicy: Int(rows.int64(i, 3)), createdAt: Date(timeIntervalSince1970: rows.double(i, 4)))
        }
    }

    private static func values(of c: APNsChannel) -> [String?] {
        [c.id, c.app, c.environment.rawValue, "\(c.storagePolicy)", "\(c.createdAt.timeIntervalSince1970)"]
    }
}
