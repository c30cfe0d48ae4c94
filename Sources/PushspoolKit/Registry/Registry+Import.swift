import Foundation
import PushspoolCore
import Synchronization
import Dispatch

/// Bulk import of JSON Lines registrations (`pushspool import FILE.jsonl`).
extension Registry {
    /// What an import did: devices written, and the lines it refused (each with its line number
    /// and the field at fault; the first `ImportReport.keptRefusals` are kept, all are counted).
    public struct ImportReport: Sendable {
        public var imported = 0
        public var refused: [String] = []
        public var refusedCount = 0
        static let keptRefusals = 1000

        mutating func refuse(_ message: String) {
            refusedCount += 1
            if refused.count < Self.keptRefusals { refused.append(message) }
        }
    }

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
                return try Self.forEachRegistration(in: url, progress: progress) { r in _ = try Self.upsert(r, now: now, in: db) }
            }
        }
    }

    /// The file names an id or a handle twice: not a bulk load after all.
    struct BulkLoadConflict: Error {}

    private static func bulkLoad(_ url: URL, now: Date, into db: SQLiteDatabase, progress: (@Sendable (Int) -> Void)?) throws -> ImportReport {
        try db.execute(dropIndexes + "CREATE TEMP TABLE import_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL);")
        let tag = try db.statement("INSERT INTO temp.import_tags(tag, device_rowid) VALUES(?, ?)")
        let insert = try db.statement("INSERT INTO devices(id, platform, handle, updated_at, lang, tags) VALUES(?, ?, ?, ?, ?, ?)")
        let stamp = now.timeIntervalSince1970
        let report = try forEachRegistration(in: url, progress: progress) { r in
            let tags = r.tags.count < 2 ? r.tags : Array(Set(r.tags)).sorted()
            try insert.bind(.text(r.id ?? UUID().uuidString.lowercased()), at: 1)
            try insert.bind(.text(r.platform.rawValue), at: 2)
            try insert.bind(.text(r.handle), at: 3)
            try insert.bind(.real(stamp), at: 4)
            try insert.bind(r.lang.map { .text($0.value) } ?? .null, at: 5)
            try insert.bind(.text(tagList(sortedUnique: tags)), at: 6)
            try insert.run()
            let rowid = db.lastInsertRowID
            for t in tags {
                try tag.bind(.text(t), at: 1)
                try tag.bind(.integer(rowid), at: 2)
                try tag.run()
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

    /// Reads, decodes and validates every line, calling `body` with each registration; returns
    /// how many there were and which lines were refused (line number and field). Reading and
    /// decoding run on a thread of their own, a few thousand lines ahead (bounded), so they
    /// overlap the database work `body` does.
    private static func forEachRegistration(in url: URL, progress: (@Sendable (Int) -> Void)? = nil,
                                            _ body: (Registration) throws -> Void) throws -> ImportReport {
        let reader: LineReader
        do {
            reader = try LineReader(url: url)
        } catch {
            throw RegistryError("cannot read \(url.path): \(error.localizedDescription)")
        }
        let queue = BatchQueue(depth: 4)
        let producerDone = DispatchSemaphore(value: 0)
        let producer = Thread {
            defer { producerDone.signal() }
            var fast = RegistrationLine()
            var batch: [Registration] = []
            batch.reserveCapacity(BatchQueue.batchSize)
            var report = ImportReport()
            do {
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
                    if batch.count == BatchQueue.batchSize {
                        guard queue.put(.batch(batch)) else { return }
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                if !batch.isEmpty, !queue.put(.batch(batch)) { return }
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
            case .batch(let registrations):
                for r in registrations {
                    try body(r)
                    count += 1
                }
                progress?(count)
            case .end(var report):
                report.imported = count
                return report
            case .failure(let error):
                throw error
            }
        }
    }

    /// Batches of decoded lines from the reading thread to the writing one, at most `depth` of
    /// them waiting (bounded memory whatever the file's size).
    final class BatchQueue: @unchecked Sendable {
        static let batchSize = 2048
        enum Item: Sendable {
            case batch([Registration])
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

        let id = try string("id")
        let platformName = try required("platform")
        guard let platform = Platform(name: platformName) else {
            throw RegistryError("platform: unknown platform \(JSONValue.string(platformName).encodedString) (expected \(Platform.acceptedNames))")
        }
        let handle = try required("handle")
        if let problem = platform.handleProblem(handle) { throw RegistryError("handle: \(problem)") }
        guard let tagsValue = value["tags"] else { throw RegistryError("tags: missing") }
        guard case .array(let items) = tagsValue else {
            throw RegistryError("tags: expected an array of strings, got \(tagsValue.typeName)")
        }
        var tags: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let t) = item else { throw RegistryError("tags[\(i)]: expected a string, got \(item.typeName)") }
            tags.append(t)
        }
        var lang: LanguageTag?
        if let text = try string("lang") {
            guard let tag = LanguageTag(text) else {
                throw RegistryError("lang: \(JSONValue.string(text).encodedString) is not \(LanguageTag.rule)")
            }
            lang = tag
        }
        let r = Registration(id: id, platform: platform, handle: handle, tags: tags, lang: lang)
        if let (field, message) = r.problem() { throw RegistryError("\(field): \(message)") }
        return r
    }
}
