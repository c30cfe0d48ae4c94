import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolCore

/// The notification routes' small parts as tables: the id rule, the event bodies, the funnel
/// added to a job's status, and which credential a "Basic or bearer" route checks.
@Suite struct NotificationPartsTests {
    static let other = NotificationID(job: 43, device: 7, platform: .web, mac: [UInt8](repeating: 0x5A, count: 16)).text
    static let good = NotificationID(job: 42, device: 7, platform: .web, mac: [UInt8](repeating: 0x5A, count: 16)).text

    static let idCases: [(String, Bool)] = {
        let cut = String(good.dropLast())
        return [(good, true), (cut, false), (good + "A", false), (cut + "+", false), (cut + "=", false),
                (String(repeating: "A", count: 46), false), ("", false), ("n-alice-0123456789abcdef", false)]
    }()

    @Test("the id rule: the public layout, nothing looked up", arguments: idCases)
    func idShape(_ id: String, _ ok: Bool) {
        #expect((NotificationIDShape.problem(id) == nil) == ok)
    }

    @Test func oneEventIsTheTypeAndAnOptionalTime() throws {
        let e = try EventReports.single(id: Self.good, body: Array(#"{"type":"opened","at":"2027-01-15T09:00:00+01:00"}"#.utf8)).get()
        #expect(e == NotificationEvent(id: Self.good, type: .opened, at: Date(timeIntervalSince1970: 1_800_000_000)))
        let bare = try EventReports.single(id: Self.good, body: Array(#"{"type":"dismissed","at":null}"#.utf8)).get()
        #expect(bare.at == nil && bare.type == .dismissed)
    }

    @Test func aBatchKeepsItsOrder() throws {
        let body = #"[{"id":"\#(Self.other)","type":"opened"},{"at":"2027-01-15T08:00:00Z","type":"received","id":"\#(Self.good)"}]"#
        let events = try EventReports.batch(Array(body.utf8)).get()
        #expect(events == [NotificationEvent(id: Self.other, type: .opened, at: nil),
                           NotificationEvent(id: Self.good, type: .received, at: Date(timeIntervalSince1970: 1_800_000_000))])
    }

    @Test func aJobsStatusCarriesItsFunnel() {
        let desk = ScriptedNotificationDesk()
        var f = Funnel(job: "j1")
        f.total.targets = 2
        desk.setFunnel(f)
        let entry = JSONValue.object([("id", "j1"), ("state", "done"), ("funnel", "stale")])
        let with = JobAPI.withFunnel(entry, id: "j1", desk: desk)
        #expect(with["funnel"]?["targets"] == .int(2))
        if case .object(let pairs) = with { #expect(pairs.map(\.0) == ["id", "state", "funnel"]) }
        #expect(JobAPI.withFunnel(.object([("id", "j2")]), id: "j2", desk: desk)["funnel"] == .null)
        desk.failFunnels()
        let failed = JobAPI.withFunnel(entry, id: "j1", desk: desk)
        #expect(failed["funnel"] == .null && failed["state"] == "done")
        #expect(failed["funnel_error"]?.stringValue?.contains("the registry is down") == true)
    }

    @Test("Basic or bearer: the scheme decides which check", arguments: [
        ("Bearer abc", true), ("bearer abc", true), ("  BEARER abc", true), ("Bearer", true), ("Basic YTpi", false), (nil, false),
        ("", false), ("Bearerabc", false),
    ] as [(String?, Bool)])
    func bearerScheme(_ header: String?, _ bearer: Bool) {
        #expect(AuthorizationHeader.isBearer(header) == bearer)
    }
}
