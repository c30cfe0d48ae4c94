import Testing
import PushspoolCore

/// Issue 46: every key of `pushspool.json` has a row in the Configuration reference, and every row
/// is a key the parser takes. The keys come from `ConfigKeys`, the lists the parser accepts keys
/// from, so a key added to the parser without a row fails here.
@Suite struct ConfigurationReferenceTests {
    static let article = "ConfigurationReference.md"

    @Test func everyKeyOfTheParserHasARowAndEveryRowIsAKey() throws {
        let tables = try ReferenceTables(article: Self.article, header: "key")
        let documented = tables.firstColumnNames
        let keys = ConfigKeys.paths
        #expect(keys.count > 80, "\(keys.count) keys")
        let missing = keys.filter { !documented.contains($0) }
        #expect(missing.isEmpty, "keys the parser accepts with no row in \(Self.article): \(missing.joined(separator: ", "))")
        let unknown = documented.filter { !keys.contains($0) }
        #expect(unknown.isEmpty, "rows in \(Self.article) for keys the parser does not accept: \(unknown.joined(separator: ", "))")
        #expect(Set(documented).count == documented.count, "a key has two rows: \(documented.sorted())")
        // Every row says type, default, meaning and which command reads it.
        for row in tables.rows {
            #expect(row.count == 5 && row.allSatisfy { !$0.isEmpty }, "\(Self.article): a row with an empty cell: \(row)")
        }
    }

    /// The lists are the parser's: a key in them is accepted, one outside is refused by name.
    @Test func theKeyListIsWhatTheParserAccepts() throws {
        for key in ConfigKeys.top where key != "owner_lease_seconds" {
            let problems = Self.problems(#"{"\#(key)": {"zzqq": 1}}"#)
            #expect(!problems.contains { $0.hasPrefix("\(key): unknown key") }, "\(key): \(problems)")
        }
        for key in ConfigKeys.queue {
            #expect(!Self.problems(#"{"queue": {"\#(key)": null}}"#).contains { $0.contains("unknown key") }, "queue.\(key)")
        }
        #expect(Self.problems(#"{"queue": {"chunk_sise": 5}}"#) == [#"queue.chunk_sise: unknown key (did you mean "chunk_size"?)"#])
        for key in ConfigKeys.http where key != "tls" {
            #expect(!Self.problems(#"{"http": {"\#(key)": null}}"#).contains { $0.contains("unknown key") }, "http.\(key)")
        }
    }

    static func problems(_ json: String) -> [String] {
        do {
            _ = try ConfigParser.parse(Array(json.utf8), source: "test.json", environment: [:])
            return []
        } catch {
            return error.problems
        }
    }
}
