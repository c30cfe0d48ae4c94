import Foundation
import Testing
@testable import PushspoolCore

/// Invalid job files and the exact problems each must report (as `pushspool validate` prints them).
@Suite struct JobParserInvalidTests {
    static let ok = #""to_tag":"a","pns":"fcm","message":"m""#
    static let apnsToken = String(repeating: "0f", count: 32)

    static let cases: [(String, String, [String])] = [
        ("syntax", "not json", ["invalid JSON at byte 0: invalid literal"]),
        ("trailing comma", #"{"to_tag":"a",}"#, ["invalid JSON at byte 14: expected a string key"]),
        ("duplicate key", #"{"pns":"fcm","pns":"apns"}"#, [#"invalid JSON at byte 13: duplicate key "pns""#]),
        ("empty file", "", ["invalid JSON at byte 0: unexpected end of input"]),
        ("not an object", "[1]", ["a job must be a JSON object, got array"]),
        ("unknown kind", #"{"kind":"sned","pns":"fcm"}"#, [#"kind: must be "send", "register" or "unregister", got "sned""#]),
        ("kind not string", #"{"kind":3,"colour":1}"#,
         [#"kind: must be "send", "register" or "unregister", got number"#, "colour: unknown field"]),
        ("unknown field", #"{\#(ok),"colour":"red"}"#, ["colour: unknown field"]),
        ("typo suggests the field", #"{"to_tag":"a","pns":"fcm","mesage":"m"}"#,
         [#"mesage: unknown field (did you mean "message"?)"#,
          "message: required (a non-empty string) unless payload overrides every platform in pns"]),
        ("typo suggests a field of this kind", #"{"kind":"register","platform":"fcm","handle":"t","tag":["a"]}"#,
         [#"tag: unknown field (did you mean "tags"?)"#]),
        ("control characters in a key are shown escaped", #"{\#(ok),"a\nb\u0001":1}"#, [#"a\nb\u{1}: unknown field"#]),
        ("C1 controls and line separators in a key are shown escaped", #"{\#(ok),"a\u0085b\u2028c":1}"#, [#"a\u{85}b\u{2028}c: unknown field"#]),
        ("register field in send", #"{\#(ok),"handle":"x"}"#, ["handle: not allowed in a send job"]),
        ("id with space", #"{"id":"a b",\#(ok)}"#, [#"id: must match [A-Za-z0-9._-]{1,128}, got "a b""#]),
        ("id too long", #"{"id":"\#(String(repeating: "x", count: 129))",\#(ok)}"#,
         [#"id: must match [A-Za-z0-9._-]{1,128}, got "\#(String(repeating: "x", count: 77))...""#]),
        ("id number", #"{"id":7,\#(ok)}"#, ["id: must be a string, got number"]),
        ("no audience", #"{"pns":"fcm","message":"m"}"#, ["one of to_tag, tags or broadcast is required"]),
        ("broadcast false alone", #"{"broadcast":false,"pns":"fcm","message":"m"}"#,
         ["one of to_tag, tags or broadcast is required"]),
        ("two audiences", #"{"to_tag":"a","broadcast":true,"pns":"fcm","message":"m"}"#,
         ["broadcast: not allowed together with to_tag (give exactly one of to_tag, tags, broadcast, fcm_topic, fcm_condition, apns_channel)"]),
        ("broadcast string", #"{"broadcast":"yes","pns":"fcm","message":"m"}"#, ["broadcast: must be true or false, got string"]),
        ("to_tag too long", #"{"to_tag":"\#(String(repeating: "t", count: 121))","pns":"fcm","message":"m"}"#,
         [#"to_tag: invalid tag "\#(String(repeating: "t", count: 77))..." (expected 1 to 120 of A-Z a-z 0-9 _ @ # . : -)"#]),
        ("tags dangling operator", #"{"tags":"username:alice && ","pns":"fcm","message":"m"}"#,
         ["tags: at position 18: expected a tag after '&&'"]),
        ("tags unbalanced", #"{"tags":"(a || b","pns":"fcm","message":"m"}"#,
         ["tags: at position 7: expected ')' to close '(' at position 0"]),
        ("tags number", #"{"tags":["a"],"pns":"fcm","message":"m"}"#, ["tags: must be a string, got array"]),
        ("to_tag number", #"{"to_tag":1,"pns":"fcm","message":"m"}"#, ["to_tag: must be a tag string, got number"]),
        ("pns missing", #"{"to_tag":"a","message":"m"}"#, ["pns: required (one or more of apns, fcm, gcm, wns, web, hms, adm)"]),
        ("pns empty", #"{"to_tag":"a","pns":[],"message":"m"}"#, ["pns: must name at least one platform (apns, fcm, gcm, wns, web, hms, adm)"]),
        ("pns number", #"{"to_tag":"a","pns":5,"message":"m"}"#, ["pns: must be a platform name or an array of them, got number"]),
        ("pns item number", #"{"to_tag":"a","pns":["apns",1],"message":"m"}"#,
         ["pns[1]: must be a platform name (apns, fcm, gcm, wns, web, hms, adm), got number"]),
        ("pns unknown string", #"{"to_tag":"a","pns":"apnz","message":"m"}"#,
         [#"pns: unknown platform "apnz" (expected apns, fcm, gcm, wns, web, hms, adm)"#]),
        ("pns unknown item", #"{"to_tag":"a","pns":["apns","apnz"],"message":"m"}"#,
         [#"pns[1]: unknown platform "apnz" (expected apns, fcm, gcm, wns, web, hms, adm)"#]),
        ("pns case", #"{"to_tag":"a","pns":["APNS"],"message":"m"}"#,
         [#"pns[0]: unknown platform "APNS" (expected apns, fcm, gcm, wns, web, hms, adm)"#]),
        ("message missing", #"{"to_tag":"a","pns":"fcm"}"#,
         ["message: required (a non-empty string) unless payload overrides every platform in pns"]),
        ("message empty", #"{"to_tag":"a","pns":"fcm","message":""}"#, ["message: must be a non-empty string"]),
        ("message number", #"{"to_tag":"a","pns":"fcm","message":5}"#, ["message: must be a string, got number"]),
        ("from empty", #"{\#(ok),"from":""}"#, ["from: must be a non-empty string"]),
        ("title number", #"{\#(ok),"title":1}"#, ["title: must be a string, got number"]),
        ("sound null", #"{\#(ok),"sound":null}"#, ["sound: must be a string, got null"]),
        ("badge negative", #"{\#(ok),"badge":-1}"#, ["badge: must be an integer from 0 to 2147483647, got -1"]),
        ("badge fraction", #"{\#(ok),"badge":1.5}"#, ["badge: must be an integer from 0 to 2147483647, got 1.5"]),
        ("badge too large", #"{\#(ok),"badge":2147483648}"#, ["badge: must be an integer from 0 to 2147483647, got 2147483648"]),
        ("ttl fraction", #"{\#(ok),"ttl_seconds":60.5}"#, ["ttl_seconds: must be an integer from 0 to 2419200 (28 days), got 60.5"]),
        ("badge string", #"{\#(ok),"badge":"3"}"#, ["badge: must be an integer from 0 to 2147483647, got string"]),
        ("data string", #"{\#(ok),"data":"x"}"#, ["data: must be an object of strings, got string"]),
        ("data number value", #"{\#(ok),"data":{"count":3}}"#, ["data.count: must be a string, got number"]),
        ("data reserved from", #"{\#(ok),"data":{"from":"x"}}"#,
         ["data.from: is reserved by FCM (from, notification, message_type, collapse_key, google*, gcm*)"]),
        ("data reserved google prefix", #"{\#(ok),"data":{"google.c.a":"x","gcm_x":"y"}}"#,
         ["data.google.c.a: is reserved by FCM (from, notification, message_type, collapse_key, google*, gcm*)",
          "data.gcm_x: is reserved by FCM (from, notification, message_type, collapse_key, google*, gcm*)"]),
        ("data message key with fcm", #"{\#(ok),"data":{"message":"x"}}"#,
         ["data.message: is where FCM carries the message text; use another key"]),
        ("data aps with apns", #"{"to_tag":"a","pns":"apns","message":"m","data":{"aps":"x"}}"#,
         ["data.aps: is reserved by APNs; use another key"]),
        ("ttl too big", #"{\#(ok),"ttl_seconds":2419201}"#, ["ttl_seconds: must be an integer from 0 to 2419200 (28 days), got 2419201"]),
        ("ttl negative", #"{\#(ok),"ttl_seconds":-1}"#, ["ttl_seconds: must be an integer from 0 to 2419200 (28 days), got -1"]),
        ("priority case", #"{\#(ok),"priority":"HIGH"}"#, [#"priority: must be "high" or "normal", got "HIGH""#]),
        ("collapse_id too long", #"{\#(ok),"collapse_id":"\#(String(repeating: "é", count: 33))"}"#,
         ["collapse_id: must be at most 64 bytes of UTF-8, got 66"]),
        ("collapse_id header injection", #"{\#(ok),"collapse_id":"a\r\nx-evil: 1"}"#, ["collapse_id: must not contain control characters"]),
        ("collapse_id empty", #"{\#(ok),"collapse_id":""}"#, ["collapse_id: must be a non-empty string"]),
        ("payload array", #"{\#(ok),"payload":[]}"#, ["payload: must be an object with apns, fcm or wns, got array"]),
        ("payload unknown platform", #"{\#(ok),"payload":{"apn":{}}}"#, ["payload.apn: unknown platform payload (expected apns, fcm, wns)"]),
        ("payload apns string", #"{\#(ok),"payload":{"apns":"x"}}"#, ["payload.apns: must be an object, got string"]),
        ("payload wns empty", #"{\#(ok),"payload":{"wns":""}}"#, ["payload.wns: must be a non-empty string"]),
        ("payload fcm target", #"{\#(ok),"payload":{"fcm":{"topic":"news"}}}"#,
         ["payload.fcm.topic: not allowed (pushspool sets the target of each message)"]),
        ("payload fcm data number", #"{\#(ok),"payload":{"fcm":{"data":{"n":1}}}}"#, ["payload.fcm.data.n: must be a string, got number"]),
        ("not_before words", #"{\#(ok),"not_before":"tomorrow"}"#,
         [#"not_before: must be an RFC 3339 time with an offset, e.g. "2026-11-22T09:00:00Z", got "tomorrow""#]),
        ("not_before no offset", #"{\#(ok),"not_before":"2026-11-22T09:30:00"}"#,
         [#"not_before: must be an RFC 3339 time with an offset, e.g. "2026-11-22T09:00:00Z", got "2026-11-22T09:30:00""#]),
        ("not_before bad day", #"{\#(ok),"not_before":"2026-02-29T09:30:00Z"}"#,
         [#"not_before: must be an RFC 3339 time with an offset, e.g. "2026-11-22T09:00:00Z", got "2026-02-29T09:30:00Z""#]),
        ("message too large for APNs and FCM", #"{"to_tag":"a","pns":["fcm","apns"],"message":"\#(String(repeating: "x", count: 4080))"}"#,
         ["message: FCM message is 4115 bytes (limit 4096)", "message: APNs payload is 4100 bytes (limit 4096)"]),
        ("message too large for HMS and ADM", #"{"to_tag":"a","pns":["hms","adm"],"message":"\#(String(repeating: "x", count: 6200))"}"#,
         ["message: HMS message body is 6274 bytes without its tokens (limit 4096)", "message: ADM data is 6214 bytes (limit 6144)"]),
        ("data number for ADM", #"{"to_tag":"a","pns":"adm","message":"m","data":{"n":1}}"#, ["data.n: must be a string, got number"]),
        ("data object for HMS and ADM", #"{"to_tag":"a","pns":["hms","adm"],"message":"m","data":{"o":{"k":"v"}}}"#, ["data.o: must be a string, got object"]),
        ("payload for ADM", #"{"to_tag":"a","pns":"adm","message":"m","payload":{"adm":{"data":{"n":1}}}}"#,
         ["payload.adm: unknown platform payload (expected apns, fcm, wns)"]),
        ("pns unknown near hms", #"{"to_tag":"a","pns":["hmss"],"message":"m"}"#,
         [#"pns[0]: unknown platform "hmss" (expected apns, fcm, gcm, wns, web, hms, adm)"#]),
        ("register missing fields", #"{"kind":"register","message":"hi"}"#,
         ["message: not allowed in a register job", "platform: required (one of apns, fcm, gcm, wns, web, hms, adm)",
          "handle: required (the device token or channel URI)"]),
        ("register unknown platform", #"{"kind":"register","platform":"ios","handle":"x"}"#,
         [#"platform: unknown platform "ios" (expected apns, fcm, gcm, wns, web, hms, adm)"#]),
        ("register short APNs token", #"{"kind":"register","handle":"abc","platform":"apns"}"#,
         ["handle: an APNs device token must be an even number (64 or more) of hex digits"]),
        ("register odd APNs token", #"{"kind":"register","platform":"apns","handle":"\#(apnsToken)0"}"#,
         ["handle: an APNs device token must be an even number (64 or more) of hex digits"]),
        ("register WNS handle not a URL", #"{"kind":"register","platform":"wns","handle":"channel-7"}"#,
         ["handle: a WNS channel URI must be an absolute https URL, e.g. https://….notify.windows.com/?token=…"]),
        ("register handle with space", #"{"kind":"register","platform":"fcm","handle":"a b"}"#,
         ["handle: must not contain spaces or control characters"]),
        ("register tags string", #"{"kind":"register","platform":"fcm","handle":"t","tags":"a"}"#,
         ["tags: must be an array of tags, got string"]),
        ("register bad tag", #"{"kind":"register","platform":"fcm","handle":"t","tags":["ok","no way"]}"#,
         [#"tags[1]: invalid tag "no way" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"#]),
        ("register installation id with a slash", #"{"kind":"register","id":"a/b","platform":"fcm","handle":"t"}"#,
         [#"id: must not contain "/" (ids appear in URL paths)"#]),
        ("unregister both", #"{"kind":"unregister","id":"i","handle":"h"}"#,
         ["handle: not allowed together with id (give exactly one of id, handle)"]),
        ("unregister neither", #"{"kind":"unregister"}"#, ["one of id or handle is required"]),
        ("unregister with send field", #"{"kind":"unregister","id":"i","pns":"fcm"}"#, ["pns: not allowed in an unregister job"]),
    ]

    @Test(arguments: cases)
    func reportsExactProblems(name: String, json: String, expected: [String]) {
        let (job, problems) = parseJob(json)
        #expect(job == nil, "\(name)")
        #expect(problems == expected, "\(name)")
    }

    @Test func invalidDefaultIDNamesID() {
        #expect(parseJob(#"{\#(Self.ok)}"#, file: "my job.json").problems
                == [#"id: the file name "my job.json" gives no valid default id (expected [A-Za-z0-9._-]{1,128} before .json); set "id""#])
        // An explicit id makes the file name irrelevant.
        #expect(parseJob(#"{"id":"fine",\#(Self.ok)}"#, file: "my job.json").job?.id == "fine")
        // Register jobs take their job id from the file name whatever `id` says (it is the installation id).
        #expect(parseJob(#"{"kind":"unregister","id":"i"}"#, file: "a b.json").problems
                == [#"the file name "a b.json" gives no valid job id (expected [A-Za-z0-9._-]{1,128} before .json)"#])
    }

    @Test func dataKeysReservedOnlyForListedPlatforms() {
        #expect(parseJob(#"{"to_tag":"a","pns":"apns","message":"m","data":{"from":"x","message":"y"}}"#).problems == [])
        #expect(parseJob(#"{"to_tag":"a","pns":"fcm","message":"m","data":{"aps":"x"}}"#).problems == [])
    }
}

@Suite struct EditDistanceTests {
    @Test(arguments: [("", "", 0), ("", "abc", 3), ("abc", "", 3), ("mesage", "message", 1), ("tag", "tags", 1),
                      ("colour", "collapse_id", 8), ("kitten", "sitting", 3)])
    func levenshtein(a: String, b: String, expected: Int) {
        #expect(Spelling.editDistance(a, b) == expected)
    }

    @Test func closestNameWithinTwoEdits() {
        #expect(Spelling.closest(to: "concurency", among: ["concurrency", "spool", "registry"]) == "concurrency")
        #expect(Spelling.closest(to: "colour", among: ["concurrency", "spool"]) == nil)
        #expect(Spelling.closest(to: "ab", among: ["xy"]) == nil)
    }
}

/// Which id names an invalid job's result log: its own `id` when one can be read.
@Suite struct DeclaredIDTests {
    @Test(arguments: [
        (#"{"id":"promo-77","to_tag":"a","pns":["bogus"],"message":"m"}"#, "promo-77"),
        (#"{"id":"promo-77","tags":"a &&","pns":"fcm"}"#, "promo-77"),                 // bad expression, no message
        (#"{"kind":"send","id":"x.1","oops":true}"#, "x.1"),
        (#"{"id":"promo-77","to_tag":"a""#, nil),                                     // truncated: not readable
        (#"{"id":"../evil","to_tag":"a","pns":"fcm","message":"m"}"#, nil),            // not a valid job id
        (#"{"id":7,"to_tag":"a","pns":"fcm","message":"m"}"#, nil),
        (#"{"kind":"register","id":"device-1","platform":"nope"}"#, nil),             // an installation id
        (#"{"kind":"bogus","id":"a"}"#, nil),
        (#"["id"]"#, nil),
    ] as [(String, String?)])
    func declaredID(text: String, expected: String?) {
        #expect(JobParser.declaredID(Array(text.utf8)) == expected)
    }
}

/// What a dispatcher learns of a waiting file before claiming it, in one JSON parse.
@Suite struct JobPeekTests {
    @Test func peeksIdScheduleAndWholeness() {
        let later = JobParser.peek(Array(#"{"id":"sale","to_tag":"a","pns":"fcm","message":"m","not_before":"2030-01-02T03:04:05Z"}"#.utf8), fileName: "x.json")
        #expect(later.isWholeJSON && later.id == "sale")
        #expect(later.notBefore == Date(timeIntervalSince1970: 1_893_553_445))
        #expect(JobParser.peek(Array(#"{"to_tag":"a"}"#.utf8), fileName: "incoming/plain.json") == .init(isWholeJSON: true, id: "plain"))
        #expect(JobParser.peek(Array(#"{"kind":"register","id":"dev-1"}"#.utf8), fileName: "r.json") == .init(isWholeJSON: true, id: "r"))
        #expect(JobParser.peek(Array(#"{"id":"../x"}"#.utf8), fileName: "f.json") == .init(isWholeJSON: true, id: nil))
        #expect(JobParser.peek(Array(#"{"id":"half","to_tag":"#.utf8), fileName: "h.json") == .init(isWholeJSON: false))
        #expect(JobParser.peek(Array(#"{"not_before":"tomorrow"}"#.utf8), fileName: "t.json").notBefore == nil)
    }
}
