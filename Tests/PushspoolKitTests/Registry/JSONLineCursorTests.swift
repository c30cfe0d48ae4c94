import Foundation
import Testing
@testable import PushspoolKit

struct JSONLineCursorTests {
    func cursor<T>(_ line: String, _ body: (inout JSONLineCursor) -> T) -> T {
        Array(line.utf8).withUnsafeBufferPointer { bytes in
            var c = JSONLineCursor(bytes)
            return body(&c)
        }
    }

    /// A plain string: its contents' range, the cursor past its closing quote.
    @Test func aStringIsReadAndPassed() {
        let (range, position) = cursor(#""ab c",x"#) { c in (c.string(), c.position) }
        #expect(range == 1..<5 && position == 6)
    }

    /// What the fast path leaves to the general decoder: nil, the position not moved.
    @Test(arguments: [#""a\"b""#, #""unterminated"#, "\"tab\there\"", #"nostring"#, "\"é\"", ""])
    func anythingButAPlainStringIsNoString(line: String) {
        let (range, position) = cursor(line) { c in (c.string(), c.position) }
        #expect(range == nil && position == 0)
    }

    @Test func spacesTabsAndCarriageReturnsAreSkipped() {
        let result = cursor(" \t\r {") { c -> [Bool] in
            c.skipSpace()
            let before = c.at(UInt8(ascii: "{"))
            let took = c.take(UInt8(ascii: "{"))
            return [before, took, c.atEnd]
        }
        #expect(result == [true, true, true])
        #expect(cursor("") { c in !c.take(UInt8(ascii: "{")) && c.atEnd })
    }

    @Test func equalsComparesTheWholeRange() {
        let results = cursor(#""platform""#) { c -> [Bool] in
            let r = c.string()!
            return [c.equals(r, "platform"), c.equals(r, "platforms"), c.equals(r, "plat"), c.equals(r, "id")]
        }
        #expect(results == [true, false, false, false])
    }
}
