import Foundation
import Testing
@testable import PushspoolKit

/// The result log's wave lines: written and read back by the one definition, and what a
/// restart learns from them.
@Suite struct WaveLineTests {
    @Test func waveLinesRoundTrip() throws {
        let lines: [ResultRecord.WaveLine] = [
            .init(status: "planned", at: "2027-03-14T03:10:00.000Z"),
            .init(status: "sent", at: "2027-03-14T03:15:00.000Z", zones: ["Asia/Kathmandu"], devices: 4),
            .init(status: "skipped", at: "2027-03-14T08:00:00.000Z", zones: ["Europe/Paris"], devices: 4, reason: "90 minutes late"),
        ]
        for w in lines { #expect(ResultRecord(line: ResultRecord.wave(w).line()) == .wave(w)) }
        var contents = ResultLogContents()
        for w in lines { contents.absorb(ResultRecord.wave(w).line()) }
        #expect(contents.wavesPlannedAt == "2027-03-14T03:10:00.000Z")
        #expect(contents.wavesEnded == ["2027-03-14T03:15:00.000Z", "2027-03-14T08:00:00.000Z"])
    }
}
