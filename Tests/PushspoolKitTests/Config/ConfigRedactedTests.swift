import Testing
@testable import PushspoolKit
import PushspoolCore

@Suite struct ConfigRedactedTests {
    /// `config --check` printed `"base_delay_ms": 1001` as 1000 (1.001 × 1000 is just under 1001).
    @Test func retryDelaysPrintAsTheyWereWritten() throws {
        let c = try ConfigLoader.parse(try JSONParser.parse(#"{"retry": {"base_delay_ms": 1001, "max_delay_ms": 1003}}"#))
        let retry = c.redacted()["retry"]
        #expect(retry?["base_delay_ms"] == .int(1001))
        #expect(retry?["max_delay_ms"] == .int(1003))
    }
}
