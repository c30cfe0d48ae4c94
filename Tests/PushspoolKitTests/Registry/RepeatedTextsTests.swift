import Foundation
import Testing
@testable import PushspoolKit

struct RepeatedTextsTests {
    /// Counts how often the value is made: a text seen before is found by its bytes.
    @Test func aTextIsMadeOnceThenFoundByItsBytes() {
        var texts = RepeatedTexts<String>()
        var made: [String] = []
        func value(_ s: String) -> String? {
            var s = s
            return s.withUTF8 { texts.value($0) { made.append($0); return $0.uppercased() } }
        }
        #expect(value("en") == "EN")
        #expect(value("fr") == "FR")
        #expect(value("en") == "EN")
        #expect(value("") == "")
        #expect(value("") == "")
        #expect(value("e") == "E")   // a prefix of a known text is another text
        #expect(made == ["en", "fr", "", "e"])
    }

    /// No value: nothing remembered, asked again next time.
    @Test func noValueIsNotRemembered() {
        var texts = RepeatedTexts<Int>()
        var asked = 0
        for _ in 0..<3 {
            let v: Int? = Array("nope".utf8).withUnsafeBufferPointer { texts.value($0) { _ in asked += 1; return nil } }
            #expect(v == nil)
        }
        #expect(asked == 3)
    }

    /// Past the 16 scanned and the 256 in the dictionary, each is still right (made anew).
    @Test(arguments: [1, 16, 17, 272, 400]) func everyTextKeepsItsOwnValue(distinct: Int) {
        var texts = RepeatedTexts<Int>()
        var made = 0
        for round in 0..<2 {
            for i in 0..<distinct {
                let v = Array("t\(i)".utf8).withUnsafeBufferPointer { texts.value($0) { made += 1; return Int($0.dropFirst())! } }
                #expect(v == i, "round \(round)")
            }
        }
        #expect(made == distinct + max(0, distinct - 272))
    }
}
