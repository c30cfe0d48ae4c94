import Foundation
import Testing
@testable import PushspoolCore

/// `apps.<app>.frequency_cap` and a send job's `capped` (README "Frequency caps").
@Suite struct FrequencyCapConfigTests {
    func problems(_ cap: String) -> [String] {
        do {
            _ = try ConfigParser.parse(Array(#"{"apps": {"shop": {"frequency_cap": \#(cap)}}}"#.utf8), source: "pushspool.json", environment: [:])
            return []
        } catch {
            return error.problems
        }
    }

    @Test func aCapIsReadPerApp() throws {
        let c = try ConfigParser.parse(Array(#"{"apps": {"shop": {"frequency_cap": {"max": 3, "per_hours": 24}}, "chat": {}}, "default_app": "chat"}"#.utf8),
                                       source: "pushspool.json", environment: [:])
        #expect(c.apps["shop"]?.frequencyCap == FrequencyCap(max: 3, perHours: 24))
        #expect(c.apps["chat"]?.frequencyCap == nil)
    }

    @Test func aBadCapIsOneLineNamingTheField() {
        let table: [(String, String)] = [
            (#"{"max": 0, "per_hours": 24}"#, "apps.shop.frequency_cap.max: must be an integer in 1…1000000"),
            (#"{"max": -2, "per_hours": 24}"#, "apps.shop.frequency_cap.max: must be an integer in 1…1000000"),
            (#"{"max": 3, "per_hours": 0}"#, "apps.shop.frequency_cap.per_hours: must be an integer in 1…8784"),
            (#"{"max": 3, "per_hours": 1.5}"#, "apps.shop.frequency_cap.per_hours: must be an integer in 1…8784"),
            (#"{"max": 3, "per_hours": "24"}"#, "apps.shop.frequency_cap.per_hours: must be an integer in 1…8784"),
            (#"{"max": 3}"#, "apps.shop.frequency_cap.per_hours: is required"),
            (#"{"max": 3, "per_hour": 24}"#, #"apps.shop.frequency_cap.per_hour: unknown key (did you mean "per_hours"?)"#),
            (#"3"#, "apps.shop.frequency_cap: must be an object, got number"),
        ]
        for (cap, expected) in table {
            let found = problems(cap)
            #expect(found.contains(expected), "\(cap): \(found)")
            #expect(found.allSatisfy { $0.hasPrefix("apps.shop.frequency_cap") }, "\(cap): \(found)")
        }
    }

    @Test func cappedIsABooleanOnDeviceAudiencesOnly() throws {
        func parse(_ text: String) throws(JobError) -> Job { try JobParser.parse(Array(text.utf8), fileName: "j.json") }
        guard case .send(let send) = try parse(#"{"broadcast": true, "pns": "fcm", "message": "x", "capped": true}"#).kind else {
            Issue.record("not a send job")
            return
        }
        #expect(send.capped)
        for (text, expected) in [(#"{"broadcast": true, "pns": "fcm", "message": "x", "capped": "yes"}"#, "capped: must be true or false"),
                                 (#"{"fcm_topic": "news", "pns": "fcm", "message": "x", "capped": true}"#,
                                  "capped: not allowed with fcm_topic (the service resolves the audience: there is no device to count)")] {
            do {
                _ = try parse(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.problems.map(\.description) == [expected], "\(error.problems)")
            }
        }
    }
}
