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

    /// What one of the bulk load's per-row optional parameters holds.
    private enum BoundValue { case null, byDefault, row }

    private static func bulkLoad(_ url: URL, now: Date, defaults: RegistryDefaults, into db: SQLiteDatabase,
                                 progress: (@Sendable (Int) -> Void)?) throws -> ImportReport {
        try db.execute(dropIndexes + "CREATE TEMP TABLE import_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL);")
        // Several rows per statement (fewer steps, one VDBE run for many rows); `?1` is the
        // import's timestamp, bound once. The reading thread numbers the rows 1, 2, 3… and pairs
        // each tag with its device by that number without waiting for the insert: the rowids
        // SQLite gives an empty table's new rows (one more than the largest, 1 in an empty
        // table; checked below). They are not bound: a row given its rowid costs a search of the
        // table for that rowid first (the cursor is not kept at the end between rows: 600
        // instructions a row), one given none is appended.
        // 64 rows (577 parameters, under SQLite's historical limit of 999): a statement's own
        // cost (step, reset, opening the table) is paid once for 64 rows, not 16.
        let rowsPerInsert = 64, tagsPerInsert = 64
        // Each row's app, environment and token kind are bound as the values stored, not left to
        // SQL (`coalesce`, a `CASE` on the app or platform: VDBE work per row); the environment is
        // bound on APNs rows only, NULL on the others. A row naming none of them (every line of
        // the fast path) stores the defaults, which stay bound from one insert to the next (below).
        // `OR FAIL`, not the default `OR ABORT`: a statement that may abort halfway through
        // several rows makes SQLite copy every page it touches that the transaction had already
        // written to a statement journal (a temporary file) first, so that it can undo that
        // statement alone: a million devices wrote 1.3 GB of such copies, 150,000 `pwrite` calls.
        // Nothing here needs that: no index exists during the load, so only a NOT NULL could
        // fail, and any failure throws and rolls the whole bulk load back to its savepoint. (A
        // duplicate id or handle fails later, building the unique indexes.)
        func devicesSQL(_ n: Int) -> String {
            "INSERT OR FAIL INTO devices(id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz) VALUES "
                + (0..<n).map { r in
                    let b = 1 + r * 9
                    return "(?\(b + 1), ?\(b + 2), ?\(b + 3), ?1, ?\(b + 4), ?\(b + 5), ?\(b + 6), "
                        + "?\(b + 7), ?\(b + 8), ?\(b + 9))"
                }.joined(separator: ", ")
        }
        func tagsSQL(_ n: Int) -> String {
            "INSERT OR FAIL INTO temp.import_tags(tag, device_rowid) VALUES " + Array(repeating: "(?, ?)", count: n).joined(separator: ", ")
        }
        // What a row naming none gets (`RegistryDefaults`), as bytes that outlive every insert
        // (bound without a copy, `SQLITE_STATIC`).
        let defaultTexts = [defaults.app, (defaults.environments[defaults.app] ?? defaults.environment).rawValue,
                            APNsTokenKind.device.rawValue].map { text -> UnsafeBufferPointer<UInt8> in
            let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: text.utf8.count + 1)
            _ = bytes.initialize(from: text.utf8)
            return UnsafeBufferPointer(rebasing: bytes[..<text.utf8.count])
        }
        defer { for t in defaultTexts { UnsafeMutablePointer(mutating: t.baseAddress!).deallocate() } }
        let (defaultApp, defaultEnvironment, deviceKind) = (defaultTexts[0], defaultTexts[1], defaultTexts[2])
        let many = try db.statement(devicesSQL(rowsPerInsert)), one = try db.statement(devicesSQL(1))
        let manyTags = try db.statement(tagsSQL(tagsPerInsert)), oneTag = try db.statement(tagsSQL(1))
        defer { for s in [many, one, manyTags, oneTag] { s.reset(); s.clearBindings() } }
        try many.bind(.real(now.timeIntervalSince1970), at: 1)
        try one.bind(.real(now.timeIntervalSince1970), at: 1)
        // What each per-row optional parameter (a row's app, environment, token kind, tz: slots
        // 4r…4r+3) holds now. Parameters stay bound from one step to the next and all start NULL;
        // a default, once bound, is not bound again for the next row naming none.
        var manySlots = [BoundValue](repeating: .null, count: 4 * rowsPerInsert), oneSlots = [BoundValue](repeating: .null, count: 4)

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
                /// Binds the row's own value, or the default (nil: NULL) unless the slot holds it already.
                func optional(_ stmt: SQLiteStatement, _ span: PackedBatch.Span, default value: UnsafeBufferPointer<UInt8>?, at index: Int32,
                              _ slot: inout BoundValue) throws(RegistryError) {
                    if span.count >= 0 {
                        try stmt.bindStatic(base + Int(span.start), count: Int(span.count), at: index)
                        slot = .row
                    } else if let value {
                        guard slot != .byDefault else { return }
                        try stmt.bindStatic(value.baseAddress!, count: value.count, at: index)
                        slot = .byDefault
                    } else {
                        guard slot != .null else { return }
                        try stmt.bind(.null, at: index)
                        slot = .null
                    }
                }
                func bindRow(_ stmt: SQLiteStatement, _ row: PackedBatch.Row, _ r: Int, _ slots: inout [BoundValue]) throws(RegistryError) {
                    let b = Int32(1 + r * 9)
                    try text(stmt, row.id, at: b + 1)
                    try text(stmt, row.platform, at: b + 2)
                    try text(stmt, row.handle, at: b + 3)
                    try text(stmt, row.lang, at: b + 4)
                    try text(stmt, row.tagList, at: b + 5)
                    try optional(stmt, row.app, default: defaultApp, at: b + 6, &slots[4 * r])
                    if !row.isAPNs {
                        try optional(stmt, .null, default: nil, at: b + 7, &slots[4 * r + 1])
                    } else if row.app.count >= 0, row.environment.count < 0 {
                        // A line naming its app only (the general path): that app's environment.
                        let app = String(decoding: UnsafeBufferPointer(start: base + Int(row.app.start), count: Int(row.app.count)), as: UTF8.self)
                        try stmt.bind(.text((defaults.environments[app] ?? defaults.environment).rawValue), at: b + 7)
                        slots[4 * r + 1] = .row
                    } else {
                        try optional(stmt, row.environment, default: defaultEnvironment, at: b + 7, &slots[4 * r + 1])
                    }
                    try optional(stmt, row.tokenKind, default: deviceKind, at: b + 8, &slots[4 * r + 2])
                    try optional(stmt, row.tz, default: nil, at: b + 9, &slots[4 * r + 3])
                }
                let rows = batch.rows
                var r = 0
                while rows.count - r >= rowsPerInsert {
                    for k in 0..<rowsPerInsert { try bindRow(many, rows[r + k], k, &manySlots) }
                    try many.run()
                    r += rowsPerInsert
                }
                while r < rows.count {
                    try bindRow(one, rows[r], 0, &oneSlots)
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
        // The tags were paired with rowids 1…n: n rows appended one after the other into an empty
        // table hold exactly those if the last one is n (`max(rowid)` reads one page, not the table),
        // or the tag index would name the wrong devices.
        let last = try db.statement("SELECT max(rowid) FROM devices")
        let lastRowid = try last.step() ? last.int64(0) : 0
        last.reset()
        guard lastRowid == Int64(report.imported) else {
            throw RegistryError("import: the new devices got rowids up to \(lastRowid), not 1…\(report.imported)")
        }
        // The tag index, sorted first, so the clustered table is written in key order (appends,
        // not millions of random inserts). The temporary table's freed pages are not zeroed
        // first (this SQLite deletes securely by default: 3,000 pages written for a million
        // devices): its file has no name from the moment SQLite opens it, and goes with the
        // connection.
        try db.execute("PRAGMA temp.secure_delete = OFF")
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
