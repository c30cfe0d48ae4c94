import Foundation
import PushspoolCore

/// Bulk import of JSON Lines registrations (`pushspool import FILE.jsonl`).
extension Registry {
    /// JSON Lines `{"id"?, "platform", "handle", "tags": [...], "lang"?}` (blank lines skipped), all in ONE
    /// transaction: any bad line aborts the whole import with an error naming the line number and
    /// field (e.g. `line 7: platform: unknown platform "ios"`), so a half-imported file never
    /// leaves the registry in a state nobody asked for. Returns the number of devices upserted.
    public func importJSONL(contentsOf url: URL, now: Date = Date()) throws -> Int {
        let reader: LineReader
        do {
            reader = try LineReader(url: url)
        } catch {
            throw RegistryError("cannot read \(url.path): \(error.localizedDescription)")
        }
        defer { reader.close() }
        return try locked { db in
            try db.transaction {
                var count = 0
                while let (number, line) = try reader.next() {
                    guard line.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { continue }
                    let registration: Registration
                    do throws(RegistryError) {
                        registration = try Self.registration(fromJSONLine: line)
                    } catch {
                        throw RegistryError("line \(number): \(error.message)")
                    }
                    _ = try Self.upsert(registration, now: now, in: db)
                    count += 1
                }
                return count
            }
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
            throw RegistryError("platform: unknown platform \(JSONValue.string(platformName).encodedString)")
        }
        let handle = try required("handle")
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
