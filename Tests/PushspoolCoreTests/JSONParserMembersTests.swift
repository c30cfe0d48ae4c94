import PushspoolCore
import Testing

/// `JSONParser.members`: a peek at a few top-level fields that builds nothing else, yet refuses
/// exactly what `parse` refuses.
@Suite struct JSONParserMembersTests {
    static let keys: Set<String> = ["kind", "id", "not_before"]

    @Test func onlyTopLevelMembersNamed() throws {
        let doc = #"{"message":{"id":"inner","not_before":"x"},"list":[{"id":1}],"id":"outer","not_before":"2030-01-02T03:04:05Z"}"#
        let found = try JSONParser.members(Array(doc.utf8), named: Self.keys)
        #expect(found == .object([("id", .string("outer")), ("not_before", .string("2030-01-02T03:04:05Z"))]))
    }

    @Test func escapedKeysAndValuesReadAsParseReadsThem() throws {
        let doc = #"{"not\u005fbefore":"2030-01-02T03:04:05Z","message":"say \"id\": \\","i\u0064":"a\"b\\c\u00e9"}"#
        let found = try JSONParser.members(Array(doc.utf8), named: Self.keys)
        #expect(found["not_before"]?.stringValue == "2030-01-02T03:04:05Z")
        #expect(found["id"]?.stringValue == "a\"b\\c\u{e9}")
        #expect(found["message"] == nil)
    }

    @Test func aDocumentThatIsNoObjectGivesNull() throws {
        #expect(try JSONParser.members(Array(#"[{"id":"x"}]"#.utf8), named: Self.keys) == .null)
        #expect(try JSONParser.members(Array(" \"id\" ".utf8), named: Self.keys) == .null)
    }

    /// Broken in a member that is not built: refused all the same, with parse's own error.
    @Test(arguments: [
        #"{"message":{"a":1,"a":2},"id":"x"}"#,                 // duplicate key, nested in a skipped member
        #"{"message":"bad \q escape","id":"x"}"#,
        #"{"message":"\ud800 alone","id":"x"}"#,
        #"{"message":[1,2,],"id":"x"}"#,
        #"{"message":1e400,"id":"x"}"#,
        #"{"message":"x","message":"y"}"#,                      // a skipped key twice
        #"{"id":"x","message":{"to":"#,                          // cut short inside a skipped member
        #"{"id":"x"} trailing"#,
        #"[1, 2"#,
        "{\"message\":" + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}",
    ])
    func refusesWhatParseRefuses(_ doc: String) {
        let bytes = Array(doc.utf8)
        let parsed = #expect(throws: JSONParser.Error.self) { try JSONParser.parse(bytes) }
        let peeked = #expect(throws: JSONParser.Error.self) { try JSONParser.members(bytes, named: Self.keys) }
        #expect(parsed == peeked)
    }

    @Test func invalidUTF8InASkippedValueIsRefused() {
        let bytes = Array(#"{"message":""#.utf8) + [0xC3, 0x28] + Array(#"","id":"x"}"#.utf8)
        let parsed = #expect(throws: JSONParser.Error.self) { try JSONParser.parse(bytes) }
        let peeked = #expect(throws: JSONParser.Error.self) { try JSONParser.members(bytes, named: Self.keys) }
        #expect(parsed == peeked)
    }
}
