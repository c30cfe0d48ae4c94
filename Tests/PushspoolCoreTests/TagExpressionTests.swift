import Testing
@testable import PushspoolCore

@Suite struct TagExpressionTests {
    /// Valid text → fully parenthesised canonical form.
    static let valid: [(String, String)] = [
        ("a", "a"),
        ("username:alice", "username:alice"),
        ("A-Z_09@#.:x", "A-Z_09@#.:x"),
        ("a && b", "(a && b)"),
        ("a || b", "(a || b)"),
        ("!a", "!a"),
        ("!!a", "!!a"),
        ("a || b && c", "(a || (b && c))"),
        ("a && b || c", "((a && b) || c)"),
        ("!a && b", "(!a && b)"),
        ("!(a && b)", "!(a && b)"),
        ("a && b && c", "((a && b) && c)"),
        ("a || b || c", "((a || b) || c)"),
        ("a || !b && c || d", "((a || (!b && c)) || d)"),
        ("(a || b) && c", "((a || b) && c)"),
        ("((a))", "a"),
        ("(follows_RedSox || follows_Cardinals) && location_Boston",
         "((follows_RedSox || follows_Cardinals) && location_Boston)"),
        ("(location_Boston && !follows_Cardinals)", "(location_Boston && !follows_Cardinals)"),
        ("a&&b||!c", "((a && b) || !c)"),
        ("  \ta\n&&\r\n(b)  ", "(a && b)"),
        ("!(!a||b)&&(c)", "(!(!a || b) && c)"),
        (String(repeating: "x", count: 120), String(repeating: "x", count: 120)),
    ]

    @Test(arguments: valid)
    func parsesToCanonical(text: String, canonical: String) throws {
        #expect(try TagExpression.parse(text).canonical == canonical)
    }

    @Test func canonicalTextParsesBackToTheSameTree() throws {
        for (text, _) in Self.valid {
            let e = try TagExpression.parse(text)
            #expect(try TagExpression.parse(e.canonical) == e, "\(text)")
        }
    }

    @Test func buildsTheExpectedTree() throws {
        #expect(try TagExpression.parse("a || !b && c") == .or(.tag("a"), .and(.not(.tag("b")), .tag("c"))))
        #expect(try TagExpression.parse("a && b && c") == .and(.and(.tag("a"), .tag("b")), .tag("c")))
    }

    /// Precedence checked by evaluation: each row's expression gives different answers for the
    /// tag set depending on how it is grouped, so a wrong precedence flips the expected value.
    static let evaluations: [(String, Set<String>, Bool)] = [
        ("a || b && c", ["a"], true),            // a || (b && c); (a || b) && c would be false
        ("a && b || c", ["c"], true),            // (a && b) || c; a && (b || c) would be false
        ("!a && b", ["a", "b"], false),          // (!a) && b
        ("!a || b", ["a"], false),               // (!a) || b; !(a || b) would also be false…
        ("!a || b", ["b", "a"], true),           // …but here !(a || b) is false and (!a) || b true
        ("!a && b", [], false),                  // !(a && b) would be true
        ("!(a && b)", [], true),
        ("(a || b) && c", ["a"], false),
        ("a || b && !c", ["b", "c"], false),
        ("a || b && !c", ["b"], true),
        ("!!a", ["a"], true),
    ]

    @Test(arguments: evaluations)
    func precedenceByEvaluation(text: String, tags: Set<String>, expected: Bool) throws {
        #expect(try TagExpression.parse(text).matches(tags) == expected)
    }

    /// Error text → exact position and message.
    static let invalid: [(String, Int, String)] = [
        ("", 0, "empty expression"),
        ("   ", 3, "empty expression"),
        ("a &&", 4, "expected a tag after '&&'"),
        ("a ||", 4, "expected a tag after '||'"),
        ("a && && b", 5, "expected a tag after '&&'"),
        ("a && || b", 5, "expected a tag after '&&'"),
        ("&& a", 0, "expected a tag before '&&'"),
        ("!", 1, "expected a tag after '!'"),
        ("(", 1, "expected a tag after '('"),
        ("()", 1, "expected a tag after '('"),
        ("a && )", 5, "expected a tag after '&&'"),
        ("(a", 2, "expected ')' to close '(' at position 0"),
        ("x && (a || (b)", 14, "expected ')' to close '(' at position 5"),
        (")", 0, "unbalanced ')'"),
        ("a)", 1, "unbalanced ')'"),
        ("(a))", 3, "unbalanced ')'"),
        ("a && b) || c", 6, "unbalanced ')'"),
        ("a b", 2, "expected '&&' or '||' before 'b'"),
        ("(a b)", 3, "expected '&&' or '||' before 'b'"),
        ("a (b)", 2, "expected '&&' or '||' before '('"),
        ("a !b", 2, "expected '&&' or '||' before '!'"),
        ("a & b", 2, "expected '&&', found '&'"),
        ("a | b", 2, "expected '||', found '|'"),
        ("a &&& b", 4, "expected '&&', found '&'"),
        ("a$b", 1, "invalid character '$' in tag"),
        ("a && b$", 6, "invalid character '$' in tag"),
        ("$a", 0, "invalid character '$'"),
        ("a && \"b\"", 5, "invalid character '\"'"),
        ("a && é", 5, "invalid character U+00E9"),
        ("a\u{0}", 1, "invalid character U+0000 in tag"),
        ("a,b", 1, "invalid character ',' in tag"),
        (String(repeating: "x", count: 121), 0, "tag longer than 120 characters"),
        ("a || " + String(repeating: "y", count: 200), 5, "tag longer than 120 characters"),
        (String(repeating: "(", count: 65) + "a" + String(repeating: ")", count: 65), 64,
         "nested more than 64 levels deep"),
        (String(repeating: "!", count: 70) + "a", 64, "nested more than 64 levels deep"),
    ]

    @Test(arguments: invalid)
    func reportsPositionAndMessage(text: String, position: Int, message: String) {
        #expect(throws: TagExpressionError(position: position, message: message)) {
            try TagExpression.parse(text)
        }
    }

    @Test func errorDescriptionNamesThePosition() {
        let error = TagExpressionError(position: 12, message: "expected a tag after '&&'")
        #expect(error.description == "at position 12: expected a tag after '&&'")
    }

    @Test func positionsCountCharactersNotBytes() {
        // "é" is two UTF-8 bytes; the error must point at the character after it, offset 1.
        #expect(throws: TagExpressionError(position: 0, message: "invalid character U+00E9")) {
            try TagExpression.parse("é$")
        }
        #expect(throws: TagExpressionError(position: 2, message: "expected '&&' or '||' before 'b'")) {
            try TagExpression.parse("a\r\nb")
        }
    }

    static let tagValidity: [(String, Bool)] = [
        ("a", true), ("username:alice", true), ("A-Za-z0-9_@#.:-", true),
        (String(repeating: "t", count: 120), true), (String(repeating: "t", count: 121), false),
        ("", false), ("a b", false), ("a&&b", false), ("a!", false), ("é", false), ("a/b", false),
    ]

    @Test(arguments: tagValidity)
    func validTags(tag: String, valid: Bool) {
        #expect(TagExpression.isValidTag(tag[...]) == valid)
        #expect(TagExpression.isValidTag(tag) == valid)
    }

    @Test func longOrChainsParseIteratively() throws {
        let text = (0..<500).map { "t\($0)" }.joined(separator: " || ")
        let e = try TagExpression.parse(text)
        #expect(e.tags.count == 500)
        #expect(e.usesOnlyOr)
        #expect(e.matches(["t499"]))
        #expect(!e.matches(["t500"]))
    }
}
