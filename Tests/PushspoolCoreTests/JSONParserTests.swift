import Testing
@testable import PushspoolCore

@Suite struct JSONParserTests {
    @Test(arguments: [
        ("0", JSONValue.int(0)),
        ("-0", .int(0)),
        ("-12", .int(-12)),
        ("9223372036854775807", .int(Int64.max)),
        ("-9223372036854775808", .int(Int64.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        ("1.5", .double(1.5)),
        ("1e3", .double(1000)),
        ("2.5E-1", .double(0.25)),
        ("-1.0e+2", .double(-100)),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("null", .null),
        (#""""#, .string("")),
        (#""a\"b\\c\/d\b\f\n\r\t""#, .string("a\"b\\c/d\u{8}\u{c}\n\r\t")),
        (#""\u00e9\u20AC""#, .string("é€")),
        (#""\ud83d\ude00""#, .string("😀")),
        ("\"é😀\"", .string("é😀")),
        (" \t\r\n[ 1 , [ ] , { } ]\n", .array([.int(1), .array([]), .object([])])),
    ])
    func parsesValues(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test func keepsObjectKeyOrder() throws {
        let v = try JSONParser.parse(#"{"z":1,"a":{"y":true,"b":null},"m":[]}"#)
        #expect(v == .object([("z", 1), ("a", .object([("y", true), ("b", .null)])), ("m", .array([]))]))
        #expect(v != .object([("a", .object([("y", true), ("b", .null)])), ("z", 1), ("m", .array([]))]))
    }

    @Test(arguments: [
        (#"{"a":1,"a":2}"#, 7, #"duplicate key "a""#),
        (#"{"b":{"a":1,"a":2}}"#, 12, #"duplicate key "a""#),
        (#""\ud83d""#, 7, "unpaired surrogate"),
        (#""\ude00""#, 7, "unpaired surrogate"),
        (#""\ud83d\u0041""#, 13, "unpaired surrogate"),
        (#""\u12G4""#, 5, "bad hex digit in \\u escape"),
        (#""\u12""#, 3, "truncated \\u escape"),
        (#""\x""#, 3, "invalid escape"),
        ("\"a\u{1}\"", 2, "control character in string"),
        (#""abc"#, 4, "truncated (ends inside a string)"),
        ("01", 1, "unexpected data after the document"),
        ("1 2", 2, "unexpected data after the document"),
        ("1.", 2, "truncated (ends inside a value)"),
        ("-", 1, "truncated (ends inside a value)"),
        ("1e", 2, "truncated (ends inside a value)"),
        ("1e400", 0, "number out of range"),     // found by the JSON fuzz target
        ("-1e400", 0, "number out of range"),
        ("+1", 0, "unexpected character '+'"),
        ("tru", 3, "truncated (ends inside a value)"),
        ("trux", 0, "invalid literal"),
        ("nul", 3, "truncated (ends inside a value)"),
        ("", 0, "unexpected end of input"),
        ("[1,]", 3, "unexpected character ']'"),
        ("[1", 2, "truncated (ends inside an array)"),
        ("[1 2]", 3, "expected ',' or ']'"),
        (#"{"a" 1}"#, 5, "expected ':'"),
        (#"{"a":1"#, 6, "truncated (ends inside an object)"),
        // A file cut short says so, whatever token would have come next.
        (#"{"id":"promo-77","message":"hel"#, 31, "truncated (ends inside a string)"),
        (#"{"to_tag":"a","pns":["apns","#, 28, "truncated (ends inside an array)"),
        (#"{"a":tr"#, 7, "truncated (ends inside an object)"),
        (#"{"a":1,"#, 7, "truncated (ends inside an object)"),
        ("{\n  ", 4, "truncated (ends inside an object)"),
        (#"{"a":1 "b":2}"#, 7, "expected ',' or '}'"),
        ("{1:2}", 1, "expected a string key"),
        ("{'a':1}", 1, "expected a string key"),
    ])
    func reportsErrorsWithOffsets(text: String, offset: Int, message: String) {
        #expect(throws: JSONParser.Error(offset: offset, message: message)) { try JSONParser.parse(text) }
    }

    @Test func invalidUTF8InStringIsRefused() {
        #expect(throws: JSONParser.Error(offset: 3, message: "invalid UTF-8 in string")) {
            try JSONParser.parse([0x22, 0xFF, 0x22])
        }
    }

    @Test func nestingIsLimited() throws {
        #expect(try JSONParser.parse(Array("[[]]".utf8), maxDepth: 2) == .array([.array([])]))
        #expect(throws: JSONParser.Error(offset: 2, message: "nested too deeply")) { try JSONParser.parse(Array("[[[]]]".utf8), maxDepth: 2) }
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Error(offset: 64, message: "nested too deeply")) { try JSONParser.parse(deep) }
    }

    /// Found by the config fuzz target: a control byte printed as it is (a form feed, an escape
    /// sequence) broke the error's line or drove the terminal; a byte of UTF-8 is not a character.
    @Test func errorsNameUnprintableBytesAndQuoteKeys() {
        #expect(throws: JSONParser.Error(offset: 1, message: "unexpected byte 0x0C")) { try JSONParser.parse("[\u{0C}]") }
        #expect(throws: JSONParser.Error(offset: 0, message: "unexpected byte 0x1B")) { try JSONParser.parse("\u{1B}[2J") }
        #expect(throws: JSONParser.Error(offset: 0, message: "unexpected byte 0xC3")) { try JSONParser.parse("é") }
        #expect(throws: JSONParser.Error(offset: 9, message: #"duplicate key "a\n""#)) { try JSONParser.parse(#"{"a\n":1,"a\n":2}"#) }
    }

    @Test func quotedEscapesEveryControlCharacterAndLineSeparator() {
        #expect(JSONValue.quoted("plain é") == #""plain é""#)
        #expect(JSONValue.quoted("a\"b\\c\n\r\t\u{0}\u{7F}\u{85}\u{2028}\u{2029}") == #""a\"b\\c\n\r\t\u0000\u007F\u0085\u2028\u2029""#)
    }

    @Test func errorDescriptionNamesTheOffset() {
        #expect(JSONParser.Error(offset: 7, message: "expected ':'").description == "invalid JSON at byte 7: expected ':'")
    }
}
