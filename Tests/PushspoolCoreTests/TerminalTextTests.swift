import Testing
import PushspoolCore

/// The one escape for user-supplied text on a terminal or one line, and JSON's escapes for the
/// same characters.
@Suite struct TerminalTextTests {
    static let cases: [(String, String, String)] = [
        ("plain text is kept", "alice-iphone café 📱", "alice-iphone café 📱"),
        ("newline, return, tab", "a\nb\rc\td", #"a\nb\rc\td"#),
        ("an escape sequence", "\u{1B}[2J", #"\u{1B}[2J"#),
        ("DEL and C1", "a\u{7F}b\u{85}c\u{9B}", #"a\u{7F}b\u{85}c\u{9B}"#),
        ("line and paragraph separators", "a\u{2028}b\u{2029}c", #"a\u{2028}b\u{2029}c"#),
        ("right-to-left override", "abc\u{202E}gpj.exe", #"abc\u{202E}gpj.exe"#),
        ("isolates and marks", "\u{2066}x\u{2069}\u{200E}\u{200F}\u{061C}", #"\u{2066}x\u{2069}\u{200E}\u{200F}\u{61C}"#),
        ("quotes are kept unless asked", #"say "hi" \ bye"#, #"say "hi" \ bye"#),
    ]

    @Test(arguments: cases.indices) func escapes(index: Int) {
        let (name, text, expected) = Self.cases[index]
        #expect(TerminalText.escaped(text) == expected, "\(name)")
    }

    @Test func quotesForLogfmt() {
        #expect(TerminalText.escaped(#"a "b" \c"#, quotes: true) == #"a \"b\" \\c"#)
        #expect(TerminalText.escaped("x\u{202E}\"", quotes: true) == #"x\u{202E}\""#)
    }

    /// JSON output (`devices`, `status --json`, result logs) escapes the same characters the
    /// JSON way, and still parses back to the same text.
    @Test func jsonEscapesTheSameCharacters() throws {
        let text = "id\u{202E}\u{2028}\u{7F}\u{85}\u{1B}é\"\\\n📱"
        let encoded = JSONValue.string(text).encodedString
        #expect(encoded == #""id\u202e\u2028\u007f\u0085\u001bé\"\\\n📱""#)
        #expect(try JSONParser.parse(Array(encoded.utf8)) == .string(text))
        #expect(JSONValue.string("plain").encodedString == #""plain""#)
    }

    @Test func problemsInJobFilesAreEscaped() {
        do {
            _ = try JobParser.parse(Array(#"{"id":"a\u202Eb","to_tag":"t","pns":["fcm"],"message":"m"}"#.utf8), fileName: "x.json")
            Issue.record("accepted a job id with a bidi override")
        } catch {
            #expect(error.problems.map(\.description) == [#"id: must match [A-Za-z0-9._-]{1,128}, got "a\u{202E}b""#])
        }
    }
}
