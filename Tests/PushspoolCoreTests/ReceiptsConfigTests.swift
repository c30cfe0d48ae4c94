import Foundation
import Testing
@testable import PushspoolCore

/// `apps.<app>.track` and `receipts.keep_days` (§ The app talks back).
@Suite struct ReceiptsConfigTests {
    func parse(_ text: String) throws(ConfigError) -> Config {
        try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: [:])
    }

    func problems(_ text: String) -> [String] {
        do {
            _ = try parse(text)
            return []
        } catch {
            return error.problems
        }
    }

    @Test func readAndDefaults() throws {
        let c = try parse(#"{"apps": {"shop": {"track": true}, "chat": {}}, "default_app": "chat", "receipts": {"keep_days": 7}}"#)
        #expect(c.apps["shop"]?.track == true && c.apps["chat"]?.track == false)
        #expect(c.receipts.keepDays == 7)
        #expect(try parse("{}").receipts.keepDays == 30)
    }

    @Test func badValuesNameTheirKey() {
        let table: [(String, String)] = [
            (#"{"receipts": {"keep_days": 0}}"#, "receipts.keep_days: must be an integer in 1…36500"),
            (#"{"receipts": {"keep_days": "30"}}"#, "receipts.keep_days: must be an integer in 1…36500"),
            (#"{"receipts": {"keepdays": 30}}"#, #"receipts.keepdays: unknown key (did you mean "keep_days"?)"#),
            (#"{"receipts": 30}"#, "receipts: must be an object, got number"),
            (#"{"apps": {"shop": {"track": "yes"}}}"#, "apps.shop.track: must be true or false, got string"),
        ]
        for (text, expected) in table {
            let found = problems(text)
            #expect(found.contains(expected), "\(text): \(found)")
        }
    }
}
