import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

@Suite struct ResultLogContentsTests {
    func device(_ id: String, _ platform: Platform = .apns) -> Recipient {
        .device(Device(id: id, platform: platform, handle: "h-\(id)", tags: [], updatedAt: Date()))
    }

    /// What a resume skips: every target with a final line, told apart by platform, by device id
    /// and by hub tags; a line repeated (a resend after a crash) counts once; a torn or foreign
    /// line counts for nothing.
    @Test func finishedTargetsFromALog() throws {
        let dir = TempDir("pushspool-log")
        var lines = [#"{"type":"job","id":"j","file":"j.json","targets":100000}"#]
        for i in 0..<100_000 where i % 3 != 0 {
            lines.append(#"{"type":"delivery","platform":"apns","provider":"apns","device":"d\#(i)","status":"delivered","attempts":1}"#)
        }
        lines.append(#"{"type":"delivery","platform":"apns","provider":"apns","device":"d1","status":"delivered","attempts":1}"#)
        lines.append(#"{"type":"delivery","platform":"fcm","provider":"azure","tags":"a && b","status":"failed","attempts":3}"#)
        lines.append(#"{"type":"note","device":"d3"}"#)
        dir.write("j.jsonl", lines.joined(separator: "\n") + "\n" + #"{"type":"delivery","platform":"apns","device":"d0"#)
        let c = try #require(ResultLogContents.read(dir.url.appendingPathComponent("j.jsonl")))

        #expect(c.finished.count == 66_666 + 1)
        #expect(c.delivered == 66_667)
        #expect(c.retries == 2)
        let wrong = (0..<100_000).filter { c.finished.contains(platform: .apns, recipient: device("d\($0)")) != ($0 % 3 != 0) }
        #expect(wrong.isEmpty)
        #expect(!c.finished.contains(platform: .fcm, recipient: device("d1", .fcm)))
        #expect(!c.finished.contains(platform: .apns, recipient: device("d1x")))
        #expect(c.finished.contains(platform: .fcm, recipient: .hub(.expression(.tag("a"), source: "a && b"))))
        #expect(!c.finished.contains(platform: .apns, recipient: .hub(.expression(.tag("a"), source: "a && b"))))
    }
}
