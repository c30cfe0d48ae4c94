import Testing
@testable import PushspoolCore

@Suite struct JSONValueTests {
    @Test(arguments: [
        (JSONValue.null, "null"),
        (.bool(true), "true"),
        (.int(-42), "-42"),
        (.int(Int64.min), "-9223372036854775808"),
        (.double(1.0), "1"),
        (.double(-2.5), "-2.5"),
        (.double(1e20), "1e+20"),
        (.double(.nan), "null"),
        (.double(.infinity), "null"),
        (.string("a/b"), #""a/b""#),
        (.string("q\"b\\n\nr\rt\tb\u{8}f\u{c}"), #""q\"b\\n\nr\rt\tb\bf\f""#),
        (.string("\u{0}\u{1}\u{1F}\u{7F}"), "\"\\u0000\\u0001\\u001f\\u007f\""),
        (.string("é😀"), "\"é😀\""),
        (.array([]), "[]"),
        (.object([]), "{}"),
        (.object([("z", 1), ("a", .array([.null, "x", false]))]), #"{"z":1,"a":[null,"x",false]}"#),
    ])
    func encodesCompactAndByteExact(value: JSONValue, expected: String) {
        #expect(value.encodedString == expected)
        #expect(value.encoded() == Array(expected.utf8))
    }

    @Test(arguments: [
        #"{"aps":{"alert":{"title":"T","body":"B"},"badge":3},"k":"v"}"#,
        #"[1,-2,2.5,"\u0001",{"a":null,"b":[true,false]}]"#,
        #"{"é":"😀","z":{},"a":[]}"#,
    ])
    func parseThenEncodeRoundTrips(text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(value.encodedString == text)
        #expect(try JSONParser.parse(value.encodedString) == value)
    }

    @Test func subscriptAndAccessors() throws {
        let v: JSONValue = .object([("a", "x"), ("n", 1)])
        #expect(v["a"] == "x")
        #expect(v["missing"] == nil)
        #expect(JSONValue.string("s")["a"] == nil)
        #expect(v["a"]?.stringValue == "x")
        #expect(v["n"]?.stringValue == nil)
    }

    @Test(arguments: [
        (JSONValue.null, "null"), (.bool(false), "boolean"), (.int(1), "number"), (.double(1.5), "number"),
        (.string(""), "string"), (.array([]), "array"), (.object([]), "object"),
    ])
    func typeNames(value: JSONValue, name: String) {
        #expect(value.typeName == name)
    }

    @Test func equalityIsStructuralAndOrderSensitive() {
        #expect(JSONValue.object([("a", 1), ("b", 2)]) == .object([("a", 1), ("b", 2)]))
        #expect(JSONValue.object([("a", 1), ("b", 2)]) != .object([("b", 2), ("a", 1)]))
        #expect(JSONValue.object([("a", 1)]) != .object([("a", 1), ("b", 2)]))
        #expect(JSONValue.int(1) != .double(1))
        #expect(JSONValue.array([1, 2]) != .array([2, 1]))
    }
}
