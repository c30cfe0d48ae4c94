import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Whatever a user supplied (an id, a tag, a message) reaches a terminal with its control and
/// bidi characters escaped: `\u{202E}` in text, `\u202e` in JSON.
@Suite struct TerminalEscapingTests {
    static let rlo = "\u{202E}"

    /// Neither a raw bidi override nor a raw escape character anywhere in what was printed.
    static func inert(_ r: RunResult) -> Bool {
        !(r.stdout + r.stderr).unicodeScalars.contains { TerminalText.mustEscape($0) && $0 != "\n" }
    }

    @Test func errorsQuoteHostileValuesEscaped() throws {
        let (dir, spool) = try initializedSpool("pushspool-escaping")
        defer { withExtendedLifetime(dir) {} }   // the spool's folder, until the test ends
        let pause = try runPushspool(["pause", "a\(Self.rlo)b"] + spool)
        #expect(pause.status == 64)
        #expect(pause.stderr == #"pushspool: pause: job id must match [A-Za-z0-9._-]{1,128}, got "a\u{202E}b""# + "\n", "\(pause.stderr)")
        let submit = try runPushspool(["submit", "--id", "x\u{1B}[2J", "--broadcast", "--pns", "fcm", "--message", "m"] + spool)
        #expect(submit.status == 65 && submit.stderr.contains(#""x\u{1B}[2J""#), "\(submit.stderr)")
        let tag = try runPushspool(["register", "--platform", "fcm", "--handle", "t", "--tag", "a\(Self.rlo)b"] + spool)
        #expect(tag.status == 65 && tag.stderr.contains(#"a\u{202E}b"#), "\(tag.stderr)")
        for r in [pause, submit, tag] { #expect(Self.inert(r), "\(r.stderr.debugDescription)") }
    }

    /// Log lines in each format and `run`'s report lines go through the same escape.
    @Test func logLinesAndReportsEscapeTheSameCharacters() {
        let event = LogEvent(time: Date(timeIntervalSince1970: 0), level: .warning, message: "device a\(Self.rlo)b\u{2028}c",
                             metadata: [("reason", "x\(Self.rlo)\u{85}")])
        #expect(StreamLogHandler.render(event, .text) == #"pushspool: warning: device a\u{202E}b\u{2028}c reason="x\u{202E}\u{85}""#)
        #expect(StreamLogHandler.render(event, .logfmt).hasSuffix(#"msg="device a\u{202E}b\u{2028}c" reason="x\u{202E}\u{85}""#))
        #expect(StreamLogHandler.render(event, .json).contains(#""msg":"device a\u202eb\u2028c","reason":"x\u202e\u0085""#))
        let report = JobReport(id: "j", file: "j.json", outcome: .failed("tag \"a\(Self.rlo)b\""))
        #expect(report.description == #"job j: failed — tag "a\u{202E}b" (moved to failed/j.json)"#)
    }

    /// `validate --resolve` shows each platform's payload: a WNS body is XML, which keeps the
    /// message's characters as they are, so the line is escaped.
    @Test func validateResolveEscapesThePayload() throws {
        let (dir, spool) = try initializedSpool("pushspool-escaping")
        dir.write("job.json", #"{"id":"j","broadcast":true,"pns":["wns","apns"],"message":"pay \u202Eusd\u2028now"}"#)
        let r = try runPushspool(["validate", "--resolve", dir.path("job.json")] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains(#"pay \u{202E}usd\u{2028}now"#), "\(r.stdout)")
        #expect(r.stdout.contains(#"pay \u202eusd\u2028now"#), "\(r.stdout)")   // the APNs JSON
        #expect(Self.inert(r), "\(r.stdout.debugDescription)")
    }

    /// A registry written before the identifier rule may hold such an id: `devices` prints it
    /// JSON-escaped.
    @Test func devicesListsOldHostileIDsEscaped() throws {
        let (dir, spool) = try initializedSpool("pushspool-escaping")
        let reg = try runPushspool(["register", "--platform", "fcm", "--handle", "t", "--id", "plain", "--tag", "u"] + spool)
        #expect(reg.status == 0, "\(reg.stderr)")
        let db = try SQLiteDatabase(path: dir.path("spool/registry.sqlite"))
        try db.execute("UPDATE devices SET id = 'a' || char(8238) || 'b' || char(27) || '[2J' || char(127) || char(133)")
        db.close()
        let r = try runPushspool(["devices"] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix(#"{"id":"a\u202eb\u001b[2J\u007f\u0085","#), "\(r.stdout)")
        #expect(Self.inert(r), "\(r.stdout.debugDescription)")
    }
}
