import Foundation
import PushspoolCore

/// Tracked jobs, their secure content and the events apps report (schema 9, `NotificationStore`).
/// Events are clustered on (job, device, platform, type): a job's funnel is one range read, and
/// a repeated report is an `INSERT OR IGNORE` that changes nothing.
extension SQLiteRegistry {
    static let notificationTables = """
        CREATE TABLE notification_keys(
            name TEXT PRIMARY KEY,
            secret TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE notification_jobs(
            number INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            secure INTEGER NOT NULL,
            content TEXT,
            audience TEXT,
            apps TEXT NOT NULL,
            platforms TEXT NOT NULL,
            sent_at REAL NOT NULL,
            expires_at REAL,
            ended_at REAL,
            deliveries TEXT,
            file TEXT);
        CREATE INDEX notification_jobs_expiring ON notification_jobs(expires_at) WHERE content IS NOT NULL;
        CREATE TABLE notification_events(
            job INTEGER NOT NULL,
            device INTEGER NOT NULL,
            platform TEXT NOT NULL,
            type TEXT NOT NULL,
            app TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY(job, device, platform, type)) WITHOUT ROWID;
        """

    static let trackedJobColumns = "number, id, secure, content, audience, apps, platforms, sent_at, expires_at, ended_at, deliveries, file"

    public func notificationKey() throws(RegistryError) -> [UInt8] {
        try locked { db in
            // Read first, outside a transaction: a key made before needs no write lock, so a desk
            // opened while another process holds it (a long import) still checks ids.
            let first = try db.statement("SELECT secret FROM notification_keys WHERE name = 'id'")
            defer { first.reset() }
            if try first.step(), let key = NotificationMAC.key(hex: first.text(0)) { return key }
            first.reset()
            return try db.transaction {
                let read = try db.statement("SELECT secret FROM notification_keys WHERE name = 'id'")
                defer { read.reset() }
                if try read.step(), let key = NotificationMAC.key(hex: read.text(0)) { return key }
                read.reset()
                try db.statement("INSERT OR IGNORE INTO notification_keys(name, secret) VALUES('id', ?)")
                    .run([.text(NotificationMAC.hex(NotificationMAC.newKey()))])
                guard try read.step(), let key = NotificationMAC.key(hex: read.text(0)) else {
                    throw RegistryError("registry: the notification key is unreadable")
                }
                return key
            }
        }
    }

    public func trackJob(_ job: TrackedJob) throws(RegistryError) -> Int64 {
        try locked { db in
            try db.transaction {
                try db.statement("""
                    INSERT OR IGNORE INTO notification_jobs(id, secure, content, audience, apps, platforms, sent_at, expires_at, file)
                    VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).run([.text(job.id), .integer(job.secure ? 1 : 0), job.content.map { .text($0.json.encodedString) } ?? .null,
                              job.audience.map { .text($0) } ?? .null, .text(TrackedJob.appList(job.apps)),
                              .text(TrackedJob.platformList(job.platforms)), .real(job.sentAt.timeIntervalSince1970),
                              job.expiresAt.map { .real($0.timeIntervalSince1970) } ?? .null, job.file.map { .text($0) } ?? .null])
                let read = try db.statement("SELECT number FROM notification_jobs WHERE id = ?")
                try read.bind([.text(job.id)])
                defer { read.reset() }
                guard try read.step() else { throw RegistryError("registry: tracked job \(job.id) was not recorded") }
                return read.int64(0)
            }
        }
    }

    public func trackedJob(number: Int64) throws(RegistryError) -> TrackedJob? {
        try trackedJob(where: "number = ?", .integer(number))
    }

    public func trackedJob(id: String) throws(RegistryError) -> TrackedJob? {
        try trackedJob(where: "id = ?", .text(id))
    }

    private func trackedJob(where condition: String, _ value: SQLiteValue) throws(RegistryError) -> TrackedJob? {
        try locked { db in
            let stmt = try db.statement("SELECT \(Self.trackedJobColumns) FROM notification_jobs WHERE \(condition)")
            try stmt.bind([value])
            defer { stmt.reset() }
            guard try stmt.step() else { return nil }
            func date(_ i: Int32) -> Date? { stmt.isNull(i) ? nil : Date(timeIntervalSince1970: stmt.double(i)) }
            func json(_ i: Int32) -> JSONValue? { stmt.isNull(i) ? nil : try? JSONParser.parse(stmt.text(i)) }
            return TrackedJob(number: stmt.int64(0), id: stmt.text(1), secure: stmt.int64(2) != 0,
                              content: json(3).flatMap(SecureJobContent.init(json:)), audience: stmt.isNull(4) ? nil : stmt.text(4),
                              apps: TrackedJob.apps(stmt.text(5)), platforms: TrackedJob.platforms(stmt.text(6)),
                              sentAt: date(7) ?? Date(timeIntervalSince1970: 0), expiresAt: date(8), endedAt: date(9),
                              deliveries: json(10).flatMap(DeliveryTally.init(json:)), file: stmt.isNull(11) ? nil : stmt.text(11))
        }
    }

    public func device(key: Int64) throws(RegistryError) -> Device? {
        try locked { db in
            let stmt = try db.statement("SELECT \(Self.deviceColumns) FROM devices d WHERE d.rowid = ?")
            try stmt.bind([.integer(key)])
            defer { stmt.reset() }
            return try stmt.step() ? try Self.device(from: stmt) : nil
        }
    }

    public func endTrackedJob(id: String, at: Date) throws(RegistryError) {
        try locked { db in
            try db.statement("UPDATE notification_jobs SET ended_at = ? WHERE id = ?").run([.real(at.timeIntervalSince1970), .text(id)])
        }
    }

    public func saveDeliveries(id: String, _ tally: DeliveryTally) throws(RegistryError) {
        try locked { db in
            try db.statement("UPDATE notification_jobs SET deliveries = ? WHERE id = ?").run([.text(tally.json.encodedString), .text(id)])
        }
    }

    public func recordEvents(_ events: [StoredEvent]) throws(RegistryError) -> [Bool] {
        guard !events.isEmpty else { return [] }
        return try locked { db in
            try db.transaction {
                let insert = try db.statement("""
                    INSERT OR IGNORE INTO notification_events(job, device, platform, type, app, at) VALUES(?, ?, ?, ?, ?, ?)
                    """)
                return try events.map { e in
                    try insert.run([.integer(e.job), .integer(e.device), .text(e.platform.rawValue), .text(e.type), .text(e.app),
                                    .real(e.at.timeIntervalSince1970)])
                    return db.changes > 0
                }
            }
        }
    }

    public func hasEvent(job: Int64, device: Int64, platform: Platform, type: String) throws(RegistryError) -> Bool {
        try locked { db in
            let stmt = try db.statement("SELECT 1 FROM notification_events WHERE job = ? AND device = ? AND platform = ? AND type = ?")
            try stmt.bind([.integer(job), .integer(device), .text(platform.rawValue), .text(type)])
            defer { stmt.reset() }
            return try stmt.step()
        }
    }

    public func eventCounts(job: Int64) throws(RegistryError) -> [EventCount] {
        try locked { db in
            let stmt = try db.statement("SELECT app, platform, type, count(*) FROM notification_events WHERE job = ? GROUP BY app, platform, type")
            try stmt.bind([.integer(job)])
            defer { stmt.reset() }
            var counts: [EventCount] = []
            while try stmt.step() {
                guard let platform = Platform(rawValue: stmt.text(1)) else { continue }
                counts.append(EventCount(app: stmt.text(0), platform: platform, type: stmt.text(2), count: Int(stmt.int64(3))))
            }
            return counts
        }
    }

    /// Reads first, without the write lock (WAL readers never wait): a sweep with nothing to
    /// erase never waits for another process's write.
    public func eraseExpiredContent(now: Date) throws(RegistryError) -> [(id: String, file: String?)] {
        try locked { db in
            let due = try db.statement("SELECT 1 FROM notification_jobs WHERE content IS NOT NULL AND expires_at <= ? LIMIT 1")
            try due.bind([.real(now.timeIntervalSince1970)])
            let any = try due.step()
            due.reset()
            guard any else { return [] }
            // Erased from the file, not only unlinked: the freed bytes are zeroed (secure_delete),
            // and the log's frames that still held them are checkpointed away (best effort: a
            // reader of another process may hold them a little longer).
            try db.execute("PRAGMA secure_delete = ON")
            defer {
                try? db.execute("PRAGMA secure_delete = OFF")
                try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
            return try db.transaction {
                let read = try db.statement("SELECT id, file FROM notification_jobs WHERE content IS NOT NULL AND expires_at <= ?")
                try read.bind([.real(now.timeIntervalSince1970)])
                var ids: [(id: String, file: String?)] = []
                while try read.step() { ids.append((read.text(0), read.isNull(1) ? nil : read.text(1))) }
                read.reset()
                try db.statement("UPDATE notification_jobs SET content = NULL WHERE content IS NOT NULL AND expires_at <= ?")
                    .run([.real(now.timeIntervalSince1970)])
                return ids
            }
        }
    }

    public func nextSweep(keepDays: Int) throws(RegistryError) -> Date? {
        try locked { db in
            let next = try db.statement("""
                SELECT min(due) FROM (SELECT min(expires_at) AS due FROM notification_jobs WHERE content IS NOT NULL
                                      UNION ALL SELECT min(ended_at) + ? FROM notification_jobs WHERE ended_at IS NOT NULL)
                """)
            try next.bind([.real(Double(keepDays) * 86_400)])
            defer { next.reset() }
            guard try next.step(), !next.isNull(0) else { return nil }
            return Date(timeIntervalSince1970: next.double(0))
        }
    }

    @discardableResult
    public func purgeEvents(endedBefore: Date) throws(RegistryError) -> Int {
        try locked { db in
            let before = SQLiteValue.real(endedBefore.timeIntervalSince1970)
            let due = try db.statement("SELECT 1 FROM notification_jobs WHERE ended_at < ? LIMIT 1")
            try due.bind([before])
            let any = try due.step()
            due.reset()
            guard any else { return 0 }
            return try db.transaction {
                try db.statement("""
                    DELETE FROM notification_events WHERE job IN (SELECT number FROM notification_jobs WHERE ended_at < ?)
                    """).run([before])
                let deleted = db.changes
                try db.statement("DELETE FROM notification_jobs WHERE ended_at < ? AND content IS NULL").run([before])
                return deleted
            }
        }
    }
}
