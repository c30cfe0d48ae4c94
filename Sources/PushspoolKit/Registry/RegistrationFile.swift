import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// A JSON Lines file of registrations (`pushspool import FILE.jsonl`), read for either registry
/// backend: every line decoded and validated on a reading thread of its own, a few thousand lines
/// ahead of the database work (bounded), refused lines reported with their number and field. The
/// backends differ only in what they do with the registrations.
struct RegistrationFile {
    let url: URL

    /// The apps a line may name (`app`), and what a line naming none gets.
    let defaults: RegistryDefaults

    init(_ url: URL, defaults: RegistryDefaults = RegistryDefaults()) {
        self.url = url
        self.defaults = defaults
    }

    private func openReader() throws -> LineReader {
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
    private func pipeline<Batch: Sendable>(_ reader: LineReader,
                                                  produce: @escaping @Sendable (LineReader, (Batch) -> Bool) throws -> RegistryImportReport,
                                                  consume: (Batch) throws -> Int) throws -> RegistryImportReport {
        let queue = ImportBatchQueue<Batch>(depth: 4)
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
    func forEachPackedBatch(progress: (@Sendable (Int) -> Void)?,
                            _ body: (PackedBatch) throws -> Void) throws -> RegistryImportReport {
        let reader = try openReader()
        let batchRows = 4096
        var count = 0
        return try pipeline(reader, produce: { (reader: LineReader, put: (PackedBatch) -> Bool) throws -> RegistryImportReport in
            var fast = RegistrationLine()
            var batch = PackedBatch(capacity: batchRows)
            var report = RegistryImportReport()
            var rowid: Int64 = 0
            var stopped = false
            let defaults = self.defaults
            while !stopped {
                // The per-line closure touches local state only: one capturing `self` or
                // `defaults` copied them (a retain per field) for every line.
                var general: (number: Int, line: [UInt8])?
                guard try reader.withNextLine({ (number: Int, line: UnsafeBufferPointer<UInt8>) in
                    guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
                    if fast.pack(line, rowid: rowid + 1, into: &batch) {
                        rowid += 1
                    } else {
                        general = (number, Array(line))
                    }
                }) != nil else { break }
                if let (number, line) = general {
                    do throws(RegistryError) {
                        let r = try Self.registration(fromJSONLine: line, defaults: defaults)
                        rowid += 1
                        batch.append(r, rowid: rowid)
                    } catch {
                        report.refuse("line \(number): \(error.message)")
                    }
                }
                if batch.count == batchRows {
                    guard put(batch) else { stopped = true; break }
                    batch = PackedBatch(capacity: batchRows)
                }
            }
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
    func forEachRegistration(progress: (@Sendable (Int) -> Void)? = nil,
                             _ body: (Registration) throws -> Void) throws -> RegistryImportReport {
        let reader = try openReader()
        var count = 0
        return try pipeline(reader, produce: { (reader: LineReader, put: ([Registration]) -> Bool) throws -> RegistryImportReport in
            var fast = RegistrationLine()
            var batch: [Registration] = []
            batch.reserveCapacity(2048)
            var report = RegistryImportReport()
            while let (number, line) = try reader.next() {
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
                if let r = fast.decode(line) {
                    batch.append(r)
                } else {
                    do throws(RegistryError) {
                        batch.append(try Self.registration(fromJSONLine: line, defaults: defaults))
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
    final class ImportBatchQueue<Batch: Sendable>: @unchecked Sendable {
        enum Item: Sendable {
            case batch(Batch)
            /// The file is read: what was refused on the way.
            case end(RegistryImportReport)
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

    static let importFields: Set<String> = ["id", "platform", "handle", "tags", "lang", "app", "environment", "token_kind", "tz"]

    /// Decodes and validates one line; the error message starts with the field it is about.
    static func registration(fromJSONLine line: [UInt8], defaults: RegistryDefaults = RegistryDefaults()) throws(RegistryError) -> Registration {
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
        _ = try string("tz")
        switch RegistrationRules.registration(id: value["id"], platform: value["platform"], handle: value["handle"],
                                              tags: tagsValue, lang: value["lang"], app: value["app"], environment: value["environment"],
                                              tokenKind: value["token_kind"], tz: value["tz"]) {
        case .success(let r):
            if let (field, message) = defaults.problem(r) { throw RegistryError("\(field): \(message)") }
            return r
        case .failure(let refused):
            throw RegistryError(refused.problems.first?.description ?? "invalid registration")
        }
    }
}
