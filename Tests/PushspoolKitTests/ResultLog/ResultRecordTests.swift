import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

/// The result log's one format: every record is read back as it was written, the delivery
/// line's bytes are the documented ones, and a summary's status comes from the job's outcome.
@Suite struct ResultRecordTests {
    static let at = Date(timeIntervalSince1970: 1_764_000_000.25)

    @Test func everyKindReadsBackAsWritten() throws {
        let device = Device(id: "alice-\u{202E}phone", platform: .apns, handle: "h", tags: [], updatedAt: Date())
        let outcome = TargetOutcome(status: .unregistered, attempts: 3,
                                    result: ProviderResult(.deviceGone(since: nil), code: "410", reason: "Unregistered", providerID: "id-1"))
        let records: [ResultRecord] = [
            ResultRecord.jobLine(id: "j", file: "j.json", receivedAt: Self.at, pns: [.apns, .web], targets: 12),
            ResultRecord(line: ResultRecord.delivery(platform: .apns, provider: "apns", recipient: .device(device), outcome: outcome, at: Self.at))!,
            ResultRecord.registration("register", device: "d\"1", platform: .fcm, tags: ["a", "lang:de"]),
            ResultRecord.registration("unregister-not-found", device: "d2", platform: nil, tags: nil),
            ResultRecord.summary(id: "j", outcome: .done(delivered: 1, failed: 2, unregistered: 3, retries: 4, matched: 0, durationMS: 5), durationMS: 5),
            ResultRecord.summary(id: "j", outcome: .cancelled(delivered: 1, failed: 0, unregistered: 0, retries: 0, notSent: 9, durationMS: 7), durationMS: 7),
            ResultRecord.summary(id: "j", outcome: .failed("pns[0]: unknown platform"), durationMS: 0),
        ]
        for record in records {
            let line = record.line()
            #expect(line.last == 0x0A && line.dropLast().allSatisfy { $0 != 0x0A })
            #expect(ResultRecord(line: line) == record, "\(String(decoding: line, as: UTF8.self))")
        }
    }

    /// The delivery line is the hot path's bytes, field for field as the README documents them.
    @Test func deliveryLineBytes() {
        let device = Device(id: "alice-iphone", platform: .apns, handle: "h", tags: [], updatedAt: Date())
        let ok = TargetOutcome(status: .delivered, attempts: 1, result: ProviderResult(.delivered, code: "200", providerID: "p-1"))
        #expect(String(decoding: ResultRecord.delivery(platform: .apns, provider: "apns", recipient: .device(device), outcome: ok, at: Self.at), as: UTF8.self)
                == #"{"type":"delivery","platform":"apns","provider":"apns","app":"default","device":"alice-iphone","status":"delivered","attempts":1,"code":"200","reason":null,"provider_id":"p-1","at":"2025-11-24T16:00:00.250Z"}"# + "\n")
        let hub = ResultRecord.delivery(platform: .fcm, provider: "azure", recipient: .hub(.expression(.tag("a"), source: "a")),
                                        outcome: ok, at: Self.at)
        guard case .delivery(let d)? = ResultRecord(line: hub) else { Issue.record("not a delivery"); return }
        #expect(d.target == .tags("a") && d.platform == .fcm && d.provider == "azure")
    }

    /// Status and counts say the same thing because both come from the outcome; a job that
    /// matched nothing says so; a failure carries its error and no counts.
    @Test func summaryStatusComesFromTheOutcome() throws {
        func summary(_ o: JobReport.Outcome) -> ResultRecord.Summary { ResultRecord.Summary(id: "j", outcome: o, durationMS: 1) }
        #expect(summary(.done(delivered: 3, failed: 0, unregistered: 0, retries: 0, matched: 3, durationMS: 1)).status == .done)
        #expect(summary(.registry("registered d1")).status == .done)
        #expect(summary(.duplicate).status == .done)
        let cancelled = summary(.cancelled(delivered: 1, failed: 1, unregistered: 1, retries: 0, notSent: 7, durationMS: 1))
        #expect(cancelled.status == .cancelled && cancelled.notSent == 7 && cancelled.matched == nil)
        let failed = summary(.failed("bad"))
        #expect(failed.status == .failed && failed.error == "bad" && failed.delivered == 0)
        #expect(summary(.done(delivered: 0, failed: 0, unregistered: 0, retries: 0, matched: 0, durationMS: 1)).warning != nil)
        #expect(summary(.done(delivered: 1, failed: 0, unregistered: 0, retries: 0, matched: 1, durationMS: 1)).warning == nil)
        #expect(SummaryStatus.allCases.filter(\.isComplete) == [.done, .cancelled])
    }

    /// Another program's line, a torn one, an unknown status or platform: not a record.
    @Test func foreignLinesAreNotRecords() {
        for line in [#"{"type":"note","device":"d3"}"#, #"{"type":"delivery","platform":"apns","device":"d0"#,
                     #"{"type":"delivery","platform":"symbian","device":"d","status":"delivered"}"#,
                     #"{"type":"summary","id":"j","status":"exploded"}"#, "[1,2]", ""] {
            #expect(ResultRecord(line: Array(line.utf8)) == nil, "\(line)")
        }
    }

    /// Every job state prints as the word status has always printed.
    @Test func jobStateWords() {
        #expect(JobState.allCases.map(\.rawValue) == ["waiting", "scheduled", "running", "pausing", "paused", "cancelling",
                                                      "waiting to resume", "waiting for wave", "not responding", "done", "cancelled", "failed"])
        #expect(JobState(request: .pause, running: true) == .pausing && JobState(request: .pause, running: false) == .paused)
        #expect(JobState(request: .cancel, running: false) == .cancelling && JobState(request: nil, running: false) == .waitingToResume)
        #expect(SummaryStatus.allCases.map { JobState($0).rawValue } == SummaryStatus.allCases.map(\.rawValue))
    }
}
