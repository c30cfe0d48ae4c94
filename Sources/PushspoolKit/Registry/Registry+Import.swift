import Foundation
import PushspoolCore
import Synchronization
import Dispatch

/// Bulk import of JSON Lines registrations (`pushspool import FILE.jsonl`).
extension Registry {
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
    public func importJSONL(contentsOf url: URL, now: Date = Date(), progress: (@Sendable (Int) -> Void)? = nil) throws -> ImportReport {
        try locked { db in
            try db.transaction {
                let probe = try db.statement("SELECT 1 FROM devices LIMIT 1")
                let empty = try !probe.step()
                probe.reset()
                if empty {
                    try db.execute("SAVEPOINT bulk")
                    do {
                        let report = try Self.bulkLoad(url, now: now, into: db, progress: progress)
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
                var report = try Self.forEachRegistration(in: url, progress: progress) { r in
                    let upserted = try Self.upsert(r, now: now, in: db)
                    if let old = upserted.movedFrom { moves.noteMove(from: old, to: upserted.device.id) }
                }
                (report.moved, report.firstMoves) = (moves.moved, moves.firstMoves)
                return report
            }
        }
    }

    /// The file names an id or a handle twice: not a bulk load after all.
    struct BulkLoadConflict: Error {}

    private static func bulkLoad(_ url: URL, now: Date, into db: SQLiteDatabase, progress: (@Sendable (Int) -> Void)?) throws -> ImportReport {
        try db.execute(dropIndexes + "CREATE TEMP TABLE import_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL);")
        // Several rows per statement (fewer steps, one VDBE run for many rows); `?1` is the
        // import's timestamp, bound once. Rowids are given: the table is empty, so they are the
        // ones SQLite would have chosen (1, 2, 3…), and the reading thread can pair each tag with
        // its device without waiting for the insert.
        let rowsPerInsert = 16, tagsPerInsert = 64
        func devicesSQL(_ n: Int) -> String {
            "INSERT INTO devices(rowid, id, platform, handle, updated_at, lang, tags) VALUES "
                + (0..<n).map { r in
                    let b = 1 + r * 6
                    return "(?\(b + 1), ?\(b + 2), ?\(b + 3), ?\(b + 4), ?1, ?\(b + 5), ?\(b + 6))"
                }.joined(separator: ", ")
        }
        func tagsSQL(_ n: Int) -> String {
            "INSERT INTO temp.import_tags(tag, device_rowid) VALUES " + Array(repeating: "(?, ?)", count: n).joined(separator: ", ")
        }
        let many = try db.statement(devicesSQL(rowsPerInsert)), one = try db.statement(devicesSQL(1))
        let manyTags = try db.statement(tagsSQL(tagsPerInsert)), oneTag = try db.statement(tagsSQL(1))
        defer { for s in [many, one, manyTags, oneTag] { s.reset(); s.clearBindings() } }
        let stamp = now.timeIntervalSince1970
        try many.bind(.real(stamp), at: 1)
        try one.bind(.real(stamp), at: 1)

        let report = try forEachPackedBatch(in: url, progress: progress) { batch in
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
                    let b = Int32(1 + r * 6)
                    try stmt.bind(.integer(row.rowid), at: b + 1)
                    try text(stmt, row.id, at: b + 2)
                    try text(stmt, row.platform, at: b + 3)
                    try text(stmt, row.handle, at: b + 4)
                    try text(stmt, row.lang, at: b + 5)
                    try text(stmt, row.tagList, at: b + 6)
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

    private static func openReader(_ url: URL) throws -> LineReader {
        do {
            return try LineReader(url: url)
        } catch let error as RegistryError {
            throw RegistryError("cannot read \(url.path): \(error.message)")
        } catch {
            throw RegistryError("cannot read \(url.path): \(error.localizedDescription)")
        }
    }

    /// Runs `produce` on a thread of its own, a few batches ahead of `consume` (bounded), so
    /// reading and decoding overlap the database work. `produce` returns what it refused.
    private static func pipeline<Batch: Sendable>(_ reader: LineReader,
                                                  produce: @escaping @Sendable (LineReader, (Batch) -> Bool) throws -> ImportReport,
                                                  consume: (Batch) throws -> Int) throws -> ImportReport {
        let queue = BatchQueue<Batch>(depth: 4)
        let producerDone = DispatchSemaphore(value: 0)
        let producer = Thread {
            defer { producerDone.signal() }
            do {
                let report = try produce(reader) { queue.put(.batch($0)) }
                _ = queue.put(.end(report))
            } catch {
                _ = queue.put(.failure(error))
            }
        }
        producer.name = "pushspool-import-reader"
        producer.start()
        defer {
            queue.cancel()
            producerDone.wait()
            reader.close()
        }
        var count = 0
        while true {
            switch queue.take() {
            case .batch(let batch):
                count += try consume(batch)
            case .end(var report):
                report.imported = count
                return report
            case .failure(let error):
                throw error
            }
        }
    }

    /// The bulk load's reader: every line decoded, validated and laid out in `PackedBatch`es
    /// (rowids 1, 2, 3… in file order), refused lines reported with their number and field.
    private static func forEachPackedBatch(in url: URL, progress: (@Sendable (Int) -> Void)?,
                                           _ body: (PackedBatch) throws -> Void) throws -> ImportReport {
        let reader = try openReader(url)
        let batchRows = 4096
        var count = 0
        return try pipeline(reader, produce: { (reader: LineReader, put: (PackedBatch) -> Bool) throws -> ImportReport in
            var fast = RegistrationLine()
            var batch = PackedBatch(capacity: batchRows)
            var report = ImportReport()
            var rowid: Int64 = 0
            var stopped = false
            while !stopped, let _ = try reader.withNextLine({ (number: Int, line: UnsafeBufferPointer<UInt8>) -> Bool in
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return true }
                if fast.pack(line, rowid: rowid + 1, into: &batch) {
                    rowid += 1
                } else {
                    do throws(RegistryError) {
                        let r = try Self.registration(fromJSONLine: Array(line))
                        rowid += 1
                        batch.append(r, rowid: rowid)
                    } catch {
                        report.refuse("line \(number): \(error.message)")
                    }
                }
                if batch.count == batchRows {
                    guard put(batch) else { stopped = true; return false }
                    batch = PackedBatch(capacity: batchRows)
                }
                return true
            }) {}
            if stopped { return report }
            if batch.count > 0, !put(batch) { return report }
            return report
        }, consume: { (batch: PackedBatch) throws -> Int in
            try body(batch)
            count += batch.count
            progress?(count)
            return batch.count
        })
    }

    /// Reads, decodes and validates every line, calling `body` with each registration; returns
    /// how many there were and which lines were refused (line number and field). Reading and
    /// decoding run on a thread of their own, a few thousand lines ahead (bounded), so they
    /// overlap the database work `body` does.
    static func forEachRegistration(in url: URL, progress: (@Sendable (Int) -> Void)? = nil,
                                            _ body: (Registration) throws -> Void) throws -> ImportReport {
        let reader = try openReader(url)
        var count = 0
        return try pipeline(reader, produce: { (reader: LineReader, put: ([Registration]) -> Bool) throws -> ImportReport in
            var fast = RegistrationLine()
            var batch: [Registration] = []
            batch.reserveCapacity(2048)
            var report = ImportReport()
            while let (number, line) = try reader.next() {
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
                if let r = fast.decode(line) {
                    batch.append(r)
                } else {
                    do throws(RegistryError) {
                        batch.append(try Self.registration(fromJSONLine: line))
                    } catch {
                        report.refuse("line \(number): \(error.message)")
                    }
                }
                if batch.count == 2048 {
                    guard put(batch) else { return report }
                    batch.removeAll(keepingCapacity: true)
                }
            }
            if !batch.isEmpty, !put(batch) { return report }
            return report
        }, consume: { (registrations: [Registration]) throws -> Int in
            for r in registrations {
                try body(r)
                count += 1
            }
            progress?(count)
            return registrations.count
        })
    }

    /// Batches of decoded lines from the reading thread to the writing one, at most `depth` of
    /// them waiting (bounded memory whatever the file's size).
    final class BatchQueue<Batch: Sendable>: @unchecked Sendable {
        enum Item: Sendable {
            case batch(Batch)
            /// The file is read: what was refused on the way.
            case end(ImportReport)
            case failure(any Error)
        }
        private let items = Mutex<(queue: [Item], cancelled: Bool)>(([], false))
        private let free: DispatchSemaphore
        private let ready = DispatchSemaphore(value: 0)

        init(depth: Int) { free = DispatchSemaphore(value: depth) }

        /// False once the consumer has gone (stop producing).
        func put(_ item: Item) -> Bool {
            free.wait()
            let accepted = items.withLock { state in
                if state.cancelled { return false }
                state.queue.append(item)
                return true
            }
            if accepted { ready.signal() } else { free.signal() }
            return accepted
        }

        func take() -> Item {
            ready.wait()
            defer { free.signal() }
            return items.withLock { $0.queue.removeFirst() }
        }

        /// The consumer stops: a producer waiting for room is let go and told so.
        func cancel() {
            items.withLock { $0.cancelled = true }
            free.signal()
        }
    }

    static let importFields: Set<String> = ["id", "platform", "handle", "tags", "lang"]

    /// Decodes and validates one line; the error message starts with the field it is about.
    static func registration(fromJSONLine line: [UInt8]) throws(RegistryError) -> Registration {
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw RegistryError(error.description)
        }
        guard case .object(let pairs) = value else {
            throw RegistryError("expected a JSON object, got \(value.typeName)")
        }
        for (key, _) in pairs where !importFields.contains(key) {
            throw RegistryError("unknown field \(JSONValue.string(key).encodedString)")
        }

        func string(_ field: String) throws(RegistryError) -> String? {
            guard let v = value[field] else { return nil }
            guard case .string(let s) = v else { throw RegistryError("\(field): expected a string, got \(v.typeName)") }
            return s
        }
        func required(_ field: String) throws(RegistryError) -> String {
            guard let s = try string(field) else { throw RegistryError("\(field): missing") }
            return s
        }

        // The line's shape (JSON Lines: every field a string, `tags` required) is checked here,
        // with the import's own wording; the values then pass the rules every registration
        // passes, and the first problem is the line's.
        _ = try string("id")
        if try required("platform") == "web" {
            // A web handle may be an object (a PushSubscription as the browser gives it).
            guard value["handle"] != nil else { throw RegistryError("handle: missing") }
        } else {
            _ = try required("handle")
        }
        guard let tagsValue = value["tags"] else { throw RegistryError("tags: missing") }
        guard case .array(let items) = tagsValue else {
            throw RegistryError("tags: expected an array of strings, got \(tagsValue.typeName)")
        }
        for (i, item) in items.enumerated() {
            guard case .string = item else { throw RegistryError("tags[\(i)]: expected a string, got \(item.typeName)") }
        }
        _ = try string("lang")
        switch RegistrationRules.registration(id: value["id"], platform: value["platform"], handle: value["handle"],
                                              tags: tagsValue, lang: value["lang"]) {
        case .success(let r):
            return r
        case .failure(let refused):
            throw RegistryError(refused.problems.first?.description ?? "invalid registration")
        }
    }
}

