import Foundation
import PushspoolCore
import Synchronization
import Dispatch

/// Bulk import of JSON Lines registrations (`pushspool import FILE.jsonl`).
extension SQLiteRegistry {
    public typealias ImportReport = RegistryImportReport

    /// JSON Lines `{"id"?, "platform", "handle", "tags": [...], "lang"?}` (blank lines skipped) in
    /// one transaction. A line that cannot be a registration is refused with its line number and
    /// field (e.g. `line 7: platform: unknown platform "ios" (expected apns, fcm, gcm, wns)`) and
    /// the others are imported: one bad token does not hold up a million good ones. Unreadable
    /// files and database errors throw, and nothing is imported.
    ///
    /// Into an empty registry the file is bulk-loaded: rows appended with no index to maintain,
    /// then every index built once, each from one sort. Should the file name an id or a handle
    /// twice (building a unique index fails), that attempt is rolled back and the file imported
    /// again line by line, with the upsert's handle-move rules.
    /// `progress` is told how many lines were handled so far, a few times a second at most.
    public func importJSONL(contentsOf url: URL, now: Date = Date(), progress: (@Sendable (Int) -> Void)? = nil) throws(RegistryError) -> ImportReport {
        try locked { db in
            try db.transaction {
                let probe = try db.statement("SELECT 1 FROM devices LIMIT 1")
                let empty = try !probe.step()
                probe.reset()
                if empty {
                    try db.execute("SAVEPOINT bulk")
                    do {
                        let report = try Self.bulkLoad(url, now: now, defaults: defaults, into: db, progress: progress)
                        try db.execute("RELEASE bulk")
                        return report
                    } catch is BulkLoadConflict {
                        try db.execute("ROLLBACK TO bulk; RELEASE bulk")
                    } catch {
                        try? db.execute("ROLLBACK TO bulk; RELEASE bulk")
                        throw error
                    }
                }
                var moves = ImportReport()
                var report = try RegistrationFile(url, defaults: defaults).forEachRegistration(progress: progress) { r in
                    let upserted = try Self.upsert(r, now: now, defaults: defaults, in: db)
                    if let old = upserted.movedFrom { moves.noteMove(from: old, to: upserted.device.id) }
                }
                (report.moved, report.firstMoves) = (moves.moved, moves.firstMoves)
                return report
            }
        }
    }

    /// The file names an id or a handle twice: not a bulk load after all.
    struct BulkLoadConflict: Error {}

    private static func bulkLoad(_ url: URL, now: Date, defaults: RegistryDefaults, into db: SQLiteDatabase,
                                 progress: (@Sendable (Int) -> Void)?) throws -> ImportReport {
        try db.execute(dropIndexes + "CREATE TEMP TABLE import_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL);")
        // Several rows per statement (fewer steps, one VDBE run for many rows); `?1` is the
        // import's timestamp, bound once. Rowids are given: the table is empty, so they are the
        // ones SQLite would have chosen (1, 2, 3…), and the reading thread can pair each tag with
        // its device without waiting for the insert.
        let rowsPerInsert = 16, tagsPerInsert = 64
        // `?2`, `?3`: the default app and environment, for lines that name none (every line of
        // the fast path); the environment only on APNs rows, that of the row's app's provider
        // where it differs from the default app's (app ids are [A-Za-z0-9._-]: safe literals).
        func environmentSQL(_ app: String) -> String {
            guard !defaults.environments.isEmpty else { return "?3" }
            return "CASE \(app)" + defaults.environments.sorted { $0.key < $1.key }.map {
                " WHEN \(SQLiteRegistry.sqlLiteral($0.key)) THEN \(SQLiteRegistry.sqlLiteral($0.value.rawValue))"
            }.joined() + " ELSE ?3 END"
        }
        func devicesSQL(_ n: Int) -> String {
            "INSERT INTO devices(rowid, id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz) VALUES "
                + (0..<n).map { r in
                    let b = 3 + r * 10
                    return "(?\(b + 1), ?\(b + 2), ?\(b + 3), ?\(b + 4), ?1, ?\(b + 5), ?\(b + 6), coalesce(?\(b + 7), ?2), "
                        + "CASE WHEN ?\(b + 3) = 'apns' THEN coalesce(?\(b + 8), \(environmentSQL("coalesce(?\(b + 7), ?2)"))) END, "
                        + "coalesce(?\(b + 9), 'device'), ?\(b + 10))"
                }.joined(separator: ", ")
        }
        func tagsSQL(_ n: Int) -> String {
            "INSERT INTO temp.import_tags(tag, device_rowid) VALUES " + Array(repeating: "(?, ?)", count: n).joined(separator: ", ")
        }
        let many = try db.statement(devicesSQL(rowsPerInsert)), one = try db.statement(devicesSQL(1))
        let manyTags = try db.statement(tagsSQL(tagsPerInsert)), oneTag = try db.statement(tagsSQL(1))
        defer { for s in [many, one, manyTags, oneTag] { s.reset(); s.clearBindings() } }
        let stamp = now.timeIntervalSince1970
        for stmt in [many, one] {
            try stmt.bind(.real(stamp), at: 1)
            try stmt.bind(.text(defaults.app), at: 2)
            try stmt.bind(.text(defaults.environment.rawValue), at: 3)
        }

        let report = try RegistrationFile(url, defaults: defaults).forEachPackedBatch(progress: progress) { batch in
            try batch.bytes.withUnsafeBufferPointer { arena in
                let base = arena.baseAddress!
                func text(_ stmt: SQLiteStatement, _ span: PackedBatch.Span, at index: Int32) throws(RegistryError) {
                    if span.count < 0 {
                        try stmt.bind(.null, at: index)
                    } else {
                        try stmt.bindStatic(base + Int(span.start), count: Int(span.count), at: index)
                    }
                }
                func bindRow(_ stmt: SQLiteStatement, _ row: PackedBatch.Row, _ r: Int) throws(RegistryError) {
                    let b = Int32(3 + r * 10)
                    try stmt.bind(.integer(row.rowid), at: b + 1)
                    try text(stmt, row.id, at: b + 2)
                    try text(stmt, row.platform, at: b + 3)
                    try text(stmt, row.handle, at: b + 4)
                    try text(stmt, row.lang, at: b + 5)
                    try text(stmt, row.tagList, at: b + 6)
                    try text(stmt, row.app, at: b + 7)
                    try text(stmt, row.environment, at: b + 8)
                    try text(stmt, row.tokenKind, at: b + 9)
                    try text(stmt, row.tz, at: b + 10)
                }
                let rows = batch.rows
                var r = 0
                while rows.count - r >= rowsPerInsert {
                    for k in 0..<rowsPerInsert { try bindRow(many, rows[r + k], k) }
                    try many.run()
                    r += rowsPerInsert
                }
                while r < rows.count {
                    try bindRow(one, rows[r], 0)
                    try one.run()
                    r += 1
                }
                var pending = 0
                for row in rows {
                    for t in 0..<Int(row.tagCount) {
                        let span = batch.tags[Int(row.firstTag) + t]
                        let i = Int32(pending * 2)
                        try manyTags.bindStatic(base + Int(span.start), count: Int(span.count), at: i + 1)
                        try manyTags.bind(.integer(row.rowid), at: i + 2)
                        pending += 1
                        if pending == tagsPerInsert {
                            try manyTags.run()
                            pending = 0
                        }
                    }
                }
                if pending > 0 {
                    // The last few: the ones bound so far, again one per statement.
                    var done = 0
                    outer: for row in rows.reversed() {
                        for t in (0..<Int(row.tagCount)).reversed() {
                            guard done < pending else { break outer }
                            let span = batch.tags[Int(row.firstTag) + t]
                            try oneTag.bindStatic(base + Int(span.start), count: Int(span.count), at: 1)
                            try oneTag.bind(.integer(row.rowid), at: 2)
                            try oneTag.run()
                            done += 1
                        }
                    }
                }
            }
        }
        // The tag index, sorted first, so the clustered table is written in key order (appends,
        // not millions of random inserts).
        try db.execute("""
            DELETE FROM device_tags;
            INSERT INTO device_tags(tag, device_rowid) SELECT tag, device_rowid FROM temp.import_tags ORDER BY 1, 2;
            DROP TABLE temp.import_tags;
            """)
        do {
            try db.execute(indexes)
        } catch {
            // A duplicate id or handle in the file: the unique index refuses it.
            if db.lastErrorIsConstraint { throw BulkLoadConflict() }
            throw error
        }
        return report
    }
}
