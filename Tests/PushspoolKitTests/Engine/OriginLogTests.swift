import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

/// A queued job's log at its origin: batches of chunks sent on the same host go in as they are
/// recorded, and the origin reads back only what other hosts recorded.
@Suite struct OriginLogTests {
    static let delivered = TargetOutcome(status: .delivered, attempts: 1, result: ProviderResult(.delivered))
    static let failed = TargetOutcome(status: .failed, attempts: 3, result: ProviderResult(.rejected, code: "400", reason: "BadDeviceToken"))

    /// Delivery lines for these devices, and what `OutcomeRecorder` counts of them.
    static func batch(_ targets: [(String, TargetOutcome)]) -> (lines: [UInt8], counted: LogPosition) {
        var lines: [UInt8] = []
        var counted = LogPosition(offset: 0)
        for (id, outcome) in targets {
            let device = Device(id: id, platform: .fcm, handle: "h-" + id, tags: [], updatedAt: Date())
            ResultRecord.appendDelivery(platform: .fcm, provider: "fcm", recipient: .device(device), outcome: outcome, at: Date(), to: &lines)
            counted.count(outcome)
        }
        counted.offset = Int64(lines.count)
        return (lines, counted)
    }

    static func ids(in url: URL) -> [String] {
        (try? String(contentsOf: url, encoding: .utf8))?.split(separator: "\n").compactMap { line in
            guard case .delivery(let d)? = ResultRecord(line: Array(line.utf8)), case .device(let id) = d.target else { return nil }
            return id
        } ?? []
    }

    @Test func batchesSentHereGoInAtOnceAndTheOriginReadsBackOnlyTheRest() throws {
        let dir = TempDir("pushspool-origin-log")
        let url = dir.url.appendingPathComponent("j.jsonl")
        let log = try ResultLog(url: url)
        let tally = SendRun.Tally(ResultLogContents())
        let origin = OriginLog(log: log, tally: tally, prior: ResultLogContents())
        let one = Self.batch([("d1", Self.delivered), ("d2", Self.failed)]), two = Self.batch([("d3", Self.delivered)])
        #expect(origin.take(chunk: 1, row: 10, lines: one.lines, counted: one.counted))
        #expect(origin.take(chunk: 1, row: 12, lines: two.lines, counted: two.counted))
        // Another host recorded d4 in the same chunk (before a takeover): only that row is read.
        let other = Self.batch([("d4", Self.failed)])
        var asked: [Int64] = []
        try origin.apply(1) { written in
            asked = written
            return [String(decoding: other.lines, as: UTF8.self)]
        }
        #expect(asked == [10, 12])
        #expect(Self.ids(in: url) == ["d1", "d2", "d3", "d4"])
        let c = tally.counts.withLock { $0 }
        #expect(c.delivered == 2 && c.failed == 2 && c.retries == 4)
        // A chunk applied is read whole the next time (the origin's record of it is gone).
        try origin.apply(1) { written in
            #expect(written.isEmpty)
            return []
        }
        origin.close()
        #expect(!origin.take(chunk: 2, row: 20, lines: two.lines, counted: two.counted))
        #expect(Self.ids(in: url).count == 4)
    }

    /// Rows committed without waiting for the flush can be lost in a database crash after the
    /// origin wrote them; their targets are sent again, and the chunk's new rows then repeat
    /// them: the log keeps each target once.
    @Test func aTargetSentAgainAfterItsRowWasLostIsWrittenOnce() throws {
        let dir = TempDir("pushspool-origin-log")
        let url = dir.url.appendingPathComponent("j.jsonl")
        let log = try ResultLog(url: url)
        log.append(line: Array("{\"type\":\"job\",\"id\":\"j\"}\n".utf8))
        let tally = SendRun.Tally(ResultLogContents())
        let origin = OriginLog(log: log, tally: tally, prior: ResultLogContents())
        let other = Self.batch([("d0", Self.delivered)])
        #expect(origin.take(chunk: 2, row: 5, lines: other.lines, counted: other.counted))
        let one = Self.batch([("d1", Self.delivered), ("d2", Self.delivered)])
        #expect(origin.take(chunk: 1, row: 10, lines: one.lines, counted: one.counted))
        let again = Self.batch([("d2", Self.delivered), ("d3", Self.failed)])
        try origin.apply(1) { _ in [String(decoding: again.lines, as: UTF8.self)] }
        #expect(Self.ids(in: url) == ["d0", "d1", "d2", "d3"])
        let c = tally.counts.withLock { $0 }
        #expect(c.delivered == 3 && c.failed == 1)
    }

    /// A resumed origin's log holds lines from before its crash: a batch that repeats one of
    /// them (recorded in the queue just before the crash) leaves it out, and counts the rest.
    @Test func aResumedLogKeepsEachTargetOnce() throws {
        let dir = TempDir("pushspool-origin-log")
        let url = dir.url.appendingPathComponent("j.jsonl")
        do {
            let first = try ResultLog(url: url)
            first.append(line: Self.batch([("d1", Self.delivered)]).lines)
            try first.close()
        }
        let prior = try #require(ResultLogContents.read(url))
        let tally = SendRun.Tally(prior)
        let origin = OriginLog(log: try ResultLog(url: url), tally: tally, prior: prior)
        let again = Self.batch([("d1", Self.delivered), ("d2", Self.delivered)])
        #expect(origin.take(chunk: 3, row: 30, lines: again.lines, counted: again.counted))
        #expect(Self.ids(in: url) == ["d1", "d2"])
        #expect(tally.counts.withLock { $0.delivered } == 2)
    }
}
