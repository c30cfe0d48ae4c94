import Foundation
import PushspoolCore

/// Broadcast channels in the SQLite registry (`apns_channels`, schema 6).
extension SQLiteRegistry {
    static let channelColumns = "id, app, environment, storage_policy, created_at"

    public func saveChannel(_ channel: APNsChannel) throws(RegistryError) {
        try locked { db in
            try db.statement("INSERT OR REPLACE INTO apns_channels(\(Self.channelColumns)) VALUES(?, ?, ?, ?, ?)")
                .run(Self.values(of: channel))
        }
    }

    @discardableResult
    public func removeChannel(app: String, id: String) throws(RegistryError) -> Bool {
        try locked { db in
            try db.statement("DELETE FROM apns_channels WHERE app = ? AND id = ?").run([.text(app), .text(id)])
            return db.changes > 0
        }
    }

    public func channels(app: String) throws(RegistryError) -> [APNsChannel] {
        try channels(where: "app = ? ORDER BY created_at, id", [.text(app)])
    }

    public func channel(app: String, id: String) throws(RegistryError) -> APNsChannel? {
        try channels(where: "app = ? AND id = ?", [.text(app), .text(id)]).first
    }

    public func replaceChannels(app: String, environment: APNsEnvironment, with channels: [APNsChannel]) throws(RegistryError) {
        try locked { db in
            try db.transaction {
                let known = Set(try Self.channels(where: "app = ? AND environment = ?", [.text(app), .text(environment.rawValue)], in: db).map(\.id))
                let listed = Set(channels.map(\.id))
                let remove = try db.statement("DELETE FROM apns_channels WHERE app = ? AND id = ?")
                for id in known.subtracting(listed) { try remove.run([.text(app), .text(id)]) }
                let add = try db.statement("INSERT INTO apns_channels(\(Self.channelColumns)) VALUES(?, ?, ?, ?, ?)")
                for channel in channels where !known.contains(channel.id) { try add.run(Self.values(of: channel)) }
            }
        }
    }

    private func channels(where condition: String, _ values: [SQLiteValue]) throws(RegistryError) -> [APNsChannel] {
        try locked { db in try Self.channels(where: condition, values, in: db) }
    }

    private static func channels(where condition: String, _ values: [SQLiteValue], in db: SQLiteDatabase) throws -> [APNsChannel] {
        let stmt = try db.statement("SELECT \(channelColumns) FROM apns_channels WHERE \(condition)")
        try stmt.bind(values)
        defer { stmt.reset() }
        var out: [APNsChannel] = []
        while try stmt.step() {
            out.append(APNsChannel(id: stmt.text(0), app: stmt.text(1), environment: APNsEnvironment(name: stmt.text(2)) ?? .production,
                                   storagePolicy: Int(stmt.int64(3)), createdAt: Date(timeIntervalSince1970: stmt.double(4))))
        }
        return out
    }

    private static func values(of c: APNsChannel) -> [SQLiteValue] {
        [.text(c.id), .text(c.app), .text(c.environment.rawValue), .integer(Int64(c.storagePolicy)), .real(c.createdAt.timeIntervalSince1970)]
    }
}
