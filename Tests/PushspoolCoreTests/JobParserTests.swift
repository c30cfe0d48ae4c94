import Foundation
import Testing
@testable import PushspoolCore

/// Parses `json` as a job file named `file`; returns the job or the problems as "field: message".
func parseJob(_ json: String, file: String = "job.json") -> (job: Job?, problems: [String]) {
    do {
        return (try JobParser.parse(Array(json.utf8), fileName: file), [])
    } catch {
        return (nil, error.problems.map(\.description))
    }
}

func sendJob(_ json: String, file: String = "job.json") -> SendJob? {
    guard case .send(let s)? = parseJob(json, file: file).job?.kind else { return nil }
    return s
}

@Suite struct JobParserTests {
    @Test func minimalSendJobUsesDefaults() throws {
        let (job, problems) = parseJob(#"{"to_tag":"username:alice","pns":["apns"],"message":"hi"}"#, file: "campaign-42.json")
        #expect(problems == [])
        let expected = Job(id: "campaign-42", file: "campaign-42.json", kind: .send(SendJob(
            audience: .tag("username:alice"), platforms: [.apns], message: Message(text: "hi"))))
        #expect(job == expected)
    }

    @Test func everySendFieldIsRead() throws {
        let json = """
        {"id":"c.42_x-1","kind":"send","to_tag":"username:alice","pns":["wns","gcm","apns","fcm"],
         "message":"hi","from":"bob","title":"Hello","badge":3,"sound":"ping.caf","data":{"b":"2","a":"1"},
         "ttl_seconds":3600,"priority":"normal","collapse_id":"score","not_before":"2026-11-22T09:30:00.5+01:00",
         "payload":{"wns":"<tile/>"}}
        """
        let (job, problems) = parseJob(json, file: "other.json")
        #expect(problems == [])
        #expect(job?.id == "c.42_x-1")
        #expect(job?.file == "other.json")
        guard case .send(let send)? = job?.kind else { Issue.record("not a send job"); return }
        #expect(send.platforms == [.wns, .fcm, .apns])
        #expect(send.audience == .tag("username:alice"))
        #expect(send.message == Message(text: "hi", from: "bob", title: "Hello", badge: 3, sound: "ping.caf",
                                        data: ["a": "1", "b": "2"], ttlSeconds: 3600, priority: .normal,
                                        collapseID: "score", overrides: PayloadOverrides(wns: "<tile/>")))
        #expect(send.notBefore == Date(timeIntervalSince1970: 1_795_336_200.5))
    }

    @Test(arguments: [
        (#""gcm""#, [Platform.fcm]),
        (#"["gcm"]"#, [.fcm]),
        (#"["fcm","gcm","fcm"]"#, [.fcm]),
        (#"["wns","apns","wns","gcm"]"#, [.wns, .apns, .fcm]),
        (#""apns""#, [.apns]),
    ])
    func pnsAcceptsStringOrArrayAndFoldsGCM(pns: String, expected: [Platform]) {
        #expect(sendJob(#"{"broadcast":true,"pns":\#(pns),"message":"m"}"#)?.platforms == expected)
    }

    @Test func audiences() throws {
        #expect(sendJob(#"{"broadcast":true,"pns":"fcm","message":"m"}"#)?.audience == .broadcast)
        #expect(sendJob(#"{"broadcast":false,"to_tag":"a","pns":"fcm","message":"m"}"#)?.audience == .tag("a"))
        let expr = try #require(sendJob(#"{"tags":"a && b","pns":"fcm","message":"m"}"#))
        guard case .expression(_, let source) = expr.audience else { Issue.record("\(expr.audience)"); return }
        #expect(source == "a && b")
    }

    @Test(arguments: [
        ("2026-11-22T09:30:00Z", 1_795_339_800.0),
        ("2026-11-22t09:30:00z", 1_795_339_800.0),
        ("2026-11-22T10:30:00+01:00", 1_795_339_800.0),
        ("2026-11-22T04:00:00-05:30", 1_795_339_800.0),
        ("2026-11-22T09:30:00.25Z", 1_795_339_800.25),
        ("2024-02-29T00:00:00Z", 1_709_164_800.0),
        ("1970-01-01T00:00:00Z", 0.0),
    ])
    func notBeforeParsesRFC3339(text: String, expected: Double) {
        #expect(sendJob(#"{"broadcast":true,"pns":"fcm","message":"m","not_before":"\#(text)"}"#)?.notBefore
                == Date(timeIntervalSince1970: expected))
    }

    @Test func payloadOverridingEveryPlatformMakesMessageOptional() throws {
        let json = #"{"to_tag":"a","pns":["apns","wns"],"payload":{"apns":{"aps":{"content-available":1}},"wns":"<badge value=\"1\"/>"}}"#
        let send = try #require(sendJob(json))
        #expect(send.message.text == "")
        #expect(send.message.overrides.apns == .object([("aps", .object([("content-available", 1)]))]))
        #expect(parseJob(#"{"to_tag":"a","pns":["apns","fcm"],"payload":{"apns":{"aps":{}}}}"#).problems
                == ["message: required (a non-empty string) unless payload overrides every platform in pns"])
    }

    @Test func registerJobUsesFileNameAsJobID() throws {
        let token = String(repeating: "ab", count: 32)
        let (job, problems) = parseJob(#"{"kind":"register","id":"inst-1","platform":"gcm","handle":"tok:1","tags":["username:alice","a","a"]}"#,
                                       file: "reg-7.json")
        #expect(problems == [])
        #expect(job == Job(id: "reg-7", file: "reg-7.json", kind: .register(
            Registration(id: "inst-1", platform: .fcm, handle: "tok:1", tags: ["username:alice", "a"]))))
        let apns = parseJob(#"{"kind":"register","platform":"apns","handle":"\#(token)"}"#).job
        #expect(apns?.kind == .register(Registration(id: nil, platform: .apns, handle: token, tags: [])))
        let wns = parseJob(#"{"kind":"register","handle":"https://dm3p.notify.windows.com/?token=x","platform":"wns","tags":[]}"#).job
        #expect(wns?.kind == .register(Registration(id: nil, platform: .wns, handle: "https://dm3p.notify.windows.com/?token=x", tags: [])))
    }

    @Test func unregisterJobs() {
        #expect(parseJob(#"{"kind":"unregister","id":"inst-1"}"#, file: "u.json").job
                == Job(id: "u", file: "u.json", kind: .unregister(.id("inst-1"))))
        #expect(parseJob(#"{"kind":"unregister","handle":"tok"}"#, file: "u.json").job?.kind == .unregister(.handle("tok")))
    }

    @Test func fileNameFromAPathAndWithoutExtension() {
        #expect(parseJob(#"{"to_tag":"a","pns":"fcm","message":"m"}"#, file: "incoming/x.json").job?.id == "x")
        #expect(parseJob(#"{"to_tag":"a","pns":"fcm","message":"m"}"#, file: "x").job?.id == "x")
    }

    @Test func everyProblemIsReportedInDocumentOrder() {
        let json = #"{"colour":"red","pns":["apnz","fcm"],"to_tag":"a b","badge":-1,"data":{"from":"x","n":1},"priority":"urgent"}"#
        #expect(parseJob(json).problems == [
            "colour: unknown field",
            #"pns[0]: unknown platform "apnz" (expected apns, fcm, gcm, wns, web, hms, adm)"#,
            #"to_tag: invalid tag "a b" (expected 1 to 120 of A-Z a-z 0-9 _ @ # . : -)"#,
            "badge: must be an integer from 0 to 2147483647, got -1",
            "data.from: is reserved by FCM (from, notification, message_type, collapse_key, google*, gcm*)",
            "data.n: must be a string, got number",
            #"priority: must be "high" or "normal", got "urgent""#,
            "message: required (a non-empty string) unless payload overrides every platform in pns",
        ])
    }

    @Test(arguments: [("3", 3), ("3.0", 3), ("3e0", 3), ("0", 0), ("2147483647", 2_147_483_647)])
    func badgeAcceptsIntegralNumbers(text: String, expected: Int) {
        #expect(sendJob(#"{"broadcast":true,"pns":"apns","message":"m","badge":\#(text)}"#)?.message.badge == expected)
    }

    @Test func jobErrorDescriptionJoinsProblems() {
        let error = JobError(problems: [JobProblem(field: "", message: "one of to_tag, tags or broadcast is required"),
                                        JobProblem(field: "pns", message: "required")])
        #expect(error.description == "one of to_tag, tags or broadcast is required; pns: required")
    }
}
