import Testing
import PushspoolCore

/// Issue 46: every field a job of each kind may have has a row in the Job file reference, and
/// every row is a field the parser takes, compared with the parser's own lists.
@Suite struct JobFileReferenceTests {
    @Test(arguments: ["send", "register", "unregister"])
    func everyFieldOfTheParserHasARow(kind: String) throws {
        let tables = try ReferenceTables(article: "JobFileReference.md", header: "\(kind) field")
        let documented = tables.firstColumnNames
        let fields = try #require(JobParser.fieldNames[kind])
        let missing = fields.subtracting(documented).sorted()
        #expect(missing.isEmpty, "\(kind) fields the parser accepts with no row: \(missing.joined(separator: ", "))")
        let unknown = Set(documented).subtracting(fields).sorted()
        #expect(unknown.isEmpty, "\(kind) rows for fields the parser does not accept: \(unknown.joined(separator: ", "))")
        #expect(Set(documented).count == documented.count, "a field has two rows")
        for row in tables.rows {
            #expect(row.count == 5 && row.allSatisfy { !$0.isEmpty }, "a row with an empty cell: \(row)")
        }
    }

    /// The lists are what the parser accepts: a listed field is never "unknown", one outside is.
    @Test func theListsAreWhatTheParserAccepts() throws {
        for field in try #require(JobParser.fieldNames["send"]) {
            let problems = Self.problems(#"{"\#(field)": null}"#)
            #expect(!problems.contains { $0.hasPrefix("\(field): unknown field") }, "\(field): \(problems)")
        }
        #expect(Self.problems(#"{"to_tag": "a", "pns": "fcm", "message": "m", "mesage": "m"}"#)
                == [#"mesage: unknown field (did you mean "message"?)"#])
        #expect(Self.problems(#"{"kind": "register", "platform": "fcm", "handle": "h", "message": "m"}"#)
                == ["message: not allowed in a register job"])
    }

    static func problems(_ json: String) -> [String] {
        do {
            _ = try JobParser.parse(Array(json.utf8), fileName: "t.json")
            return []
        } catch {
            return error.problems.map { "\($0.field): \($0.message)" }
        }
    }
}
