import Testing
@testable import PushspoolKit
import PushspoolTestSupport

@Suite struct LogHandlerTests {
    /// Whether events feed a log collector is the handler's to say: the logger asked by
    /// downcasting to `StreamLogHandler`, so any other handler (an embedder's JSON shipper) was
    /// taken for a person's terminal and got the per-job events at debug level.
    @Test func aHandlerOfAnyTypeSaysWhetherItFeedsACollector() {
        struct Shipper: LogHandler {
            func emit(_ event: LogEvent) {}
            var isStructured: Bool { true }
        }
        #expect(Log(handler: Shipper()).isStructured)
        #expect(!Log(handler: CollectingLogHandler()).isStructured)
        #expect(Log(handler: StreamLogHandler(format: .json, write: { _ in })).isStructured)
        #expect(Log(handler: StreamLogHandler(format: .logfmt, write: { _ in })).isStructured)
        #expect(!Log(handler: StreamLogHandler(format: .text, write: { _ in })).isStructured)
    }
}
