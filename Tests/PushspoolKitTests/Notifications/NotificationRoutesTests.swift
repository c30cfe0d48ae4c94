import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolTestSupport
import PushspoolCore

/// The notification routes over a scripted desk, through the real front door and embedded server:
/// the tutorial's and the full shape, who the desk is asked for, the one `404`, `410`, and bad
/// input refused naming the field before the desk is asked.
@Suite struct NotificationRoutesTests {
    static func id(job: Int64, device: Int64, platform: Platform = .apns, mac: UInt8) -> String {
        NotificationID(job: job, device: device, platform: platform, mac: [UInt8](repeating: mac, count: NotificationID.macBytes)).text
    }
    static let aliceID = id(job: 7, device: 1, mac: 0xA1)
    static let bobID = id(job: 7, device: 2, platform: .fcm, mac: 0xB0)
    /// Of the right shape, never sent.
    static let nobodyID = id(job: 99, device: 3, mac: 0x00)
    static let sent = Date(timeIntervalSince1970: 1_800_000_000)

    /// alice (`s3cret-Alice`) and bob (`hunter2!`) as app users, `tok-ci-0123456789` as a service.
    final class Door {
        let desk = ScriptedNotificationDesk()
        let auth = AuthHarness(users: [AuthFixtures.alice, AuthFixtures.bob2b])
        let server: HTTPServer
        let port: Int

        init() throws {
            let api = NotificationAPI(desk: desk, apps: ServedApps(defaults: RegistryDefaults(apps: ["default", "chat"]), several: true), now: { NotificationRoutesTests.sent.addingTimeInterval(60) })
            let door = FrontDoor(routes: api.routes, authenticator: try auth.make(), metrics: HTTPMetrics(), log: Log(handler: CollectingLogHandler()))
            var limits = HTTPServer.Limits()
            limits.largerBodies = ["/v1/events": NotificationAPI.maxBatchBody]   // as FrontDoorServer sets it
            server = HTTPServer(limits: limits, handler: door.handle, completed: door.completed)
            port = Int(try server.start(ListenAddress(host: "127.0.0.1", port: 0)).port)
            desk.add(SecureContent(id: NotificationRoutesTests.aliceID, job: "rent-1", app: "default", platform: .apns, title: "Rent",
                                   message: "From bank: Ihre Miete ist fällig", data: ["k": "v", "a": "1"], url: "https://example.com/r",
                                   image: nil, sentAt: sent, expiresAt: sent.addingTimeInterval(86_400)), owner: "alice")
            desk.add(SecureContent(id: NotificationRoutesTests.bobID, job: "rent-1", app: "default", platform: .fcm, title: nil,
                                   message: "From bank: your rent is due", data: nil, url: nil, image: nil,
                                   sentAt: sent, expiresAt: sent.addingTimeInterval(86_400)), owner: "bob")
        }

        deinit { server.stop() }

        func client() throws -> RawHTTPClient { try RawHTTPClient(port: port) }
    }

    static let alice = [("Authorization", AuthFixtures.basic("alice", "s3cret-Alice"))]
    static let bob = [("Authorization", AuthFixtures.basic("bob", "hunter2!"))]
    static let service = [("Authorization", "Bearer \(AuthFixtures.ciToken)")]

    static func error(_ a: RawHTTPClient.Answer) -> String { (a.json as? [String: Any])?["error"] as? String ?? "" }

    @Test func theTutorialsShapeForItsOwner() throws {
        let d = try Door()
        let c = try d.client()
        var a = try c.request("GET", "/api/notifications/\(Self.aliceID)", headers: Self.alice)
        #expect(a.status == 200)
        #expect(a.text == #"{"Id":"\#(Self.aliceID)","Payload":"From bank: Ihre Miete ist fällig","Read":false}"#)
        #expect(a.header("Content-Type") == "application/json" && a.header("Cache-Control") == "no-store")
        // Read the second time; the app's path under /apps/{app}/api answers alike.
        a = try c.request("GET", "/apps/default/api/notifications/\(Self.aliceID)", headers: Self.alice)
        #expect(a.text == #"{"Id":"\#(Self.aliceID)","Payload":"From bank: Ihre Miete ist fällig","Read":true}"#)
        a = try c.request("GET", "/apps/nope/api/notifications/\(Self.aliceID)", headers: Self.alice)
        #expect(a.status == 404 && Self.error(a).hasPrefix("app: "), "\(a.text)")
        #expect(d.desk.calls == [.init(method: "fetch", ids: [Self.aliceID], user: "alice"), .init(method: "fetch", ids: [Self.aliceID], user: "alice")])
        // Without credentials: 401 with the Basic challenge, the desk not asked.
        a = try c.request("GET", "/api/notifications/\(Self.aliceID)")
        #expect(a.status == 401 && a.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
        #expect(d.desk.calls.count == 2)
    }

    @Test func theFullShapeForItsOwnerOrAService() throws {
        let d = try Door()
        let c = try d.client()
        let expected = #"{"id":"\#(Self.aliceID)","job":"rent-1","app":"default","platform":"apns","title":"Rent","#
            + #""message":"From bank: Ihre Miete ist fällig","data":{"a":"1","k":"v"},"url":"https://example.com/r","image":null,"#
            + #""sent_at":"2027-01-15T08:00:00.000Z","expires_at":"2027-01-16T08:00:00.000Z"}"#
        var a = try c.request("GET", "/v1/notifications/\(Self.aliceID)", headers: Self.alice)
        #expect(a.status == 200 && a.text == expected, "\(a.text)")
        a = try c.request("GET", "/v1/notifications/\(Self.aliceID)", headers: Self.service)
        #expect(a.status == 200 && a.text == expected, "\(a.text)")
        a = try c.request("GET", "/v1/notifications/\(Self.bobID)", headers: Self.service)
        #expect((a.json as? [String: Any])?["title"] is NSNull && (a.json as? [String: Any])?["data"] is NSNull, "\(a.text)")
        #expect(d.desk.calls.map(\.user) == ["alice", nil, nil])
        // A wrong token is a failed service login, whatever the route also takes.
        a = try c.request("GET", "/v1/notifications/\(Self.aliceID)", headers: [("Authorization", "Bearer wrong")])
        #expect(a.status == 401 && a.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        // HEAD would count a receipt and change Read: refused (read raw: a HEAD answer has no body to wait for).
        let head = try RawHTTPClient(port: d.port, timeout: 1)
        try head.send("HEAD /v1/notifications/\(Self.aliceID) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(AuthFixtures.ciToken)\r\n\r\n")
        let raw = head.readToEnd().text
        #expect(raw.hasPrefix("HTTP/1.1 405") && raw.contains("Allow: GET"), "\(raw)")
        #expect(d.desk.calls.count == 3)
    }

    @Test func unknownForgedAndForeignIDsGetOneAnswerAfterTheDesksWork() throws {
        let d = try Door()
        let c = try d.client()
        var answers: [String] = []
        // bob reads alice's id; an id never sent; alice's id with its last character changed (forged).
        let asked = [(Self.bob, Self.aliceID), (Self.bob, Self.nobodyID), (Self.bob, Self.id(job: 7, device: 2, platform: .fcm, mac: 0xB1)),
                     (Self.alice, Self.bobID)]
        for (who, id) in asked {
            for path in ["/api/notifications/\(id)", "/apps/default/api/notifications/\(id)", "/v1/notifications/\(id)"] {
                let a = try c.request("GET", path, headers: who)
                answers.append("\(a.status)|\(Self.withoutDate(c.lastHead))|\(a.text)")
            }
            let a = try c.request("POST", "/api/notifications/\(id)/events", headers: who, body: #"{"type":"opened"}"#)
            answers.append("\(a.status)|\(Self.withoutDate(c.lastHead))|\(a.text)")
        }
        #expect(Set(answers).count == 1, "\(Set(answers))")
        #expect(answers[0].hasPrefix("404|") && answers[0].hasSuffix(#"{"error":"id: no notification of yours has this id"}"#), "\(answers[0])")
        // Each reached the desk: no early exit for any of them.
        #expect(d.desk.calls.count == asked.count * 4)
        #expect(d.desk.counted.isEmpty)
    }

    /// The status line and headers without `Date`, which says when, not what.
    static func withoutDate(_ head: String) -> String {
        head.components(separatedBy: "\r\n").filter { !$0.lowercased().hasPrefix("date:") }.joined(separator: "\r\n")
    }

    @Test func anExpiredIDIsGone() throws {
        let d = try Door()
        d.desk.expire(Self.aliceID)
        let a = try d.client().request("GET", "/api/notifications/\(Self.aliceID)", headers: Self.alice)
        #expect(a.status == 410 && Self.error(a) == "id: this notification's content has expired and was erased", "\(a.text)")
    }

    @Test("ids of the wrong shape are refused naming the field, and the desk is not asked", arguments: [
        "short", String(repeating: "a", count: 46), String(aliceID.dropLast()), aliceID + "A", String(aliceID.dropLast()) + "%2F",
        String(aliceID.dropLast()) + ".", String(aliceID.dropLast(2)) + "%C3%A9",
        // The layout's other public parts: version 2, job 0.
        "Ag" + String(aliceID.dropFirst(2)), NotificationID(job: 0, device: 1, platform: .apns, mac: [UInt8](repeating: 1, count: 16)).text,
    ])
    func wrongShape(_ id: String) throws {
        let d = try Door()
        let c = try d.client()
        for (method, path, who, body) in [("GET", "/api/notifications/\(id)", Self.alice, nil), ("GET", "/v1/notifications/\(id)", Self.service, nil),
                                          ("POST", "/api/notifications/\(id)/events", Self.alice, #"{"type":"received"}"#)] as [(String, String, [(String, String)], String?)] {
            let a = try c.request(method, path, headers: who, body: body)
            #expect(a.status == 400 && Self.error(a).hasPrefix("id: not a notification id (46 characters of base64url"), "\(path): \(a.text)")
        }
        let a = try c.request("POST", "/v1/events", headers: Self.service, body: #"[{"id":"\#(Self.aliceID)","type":"opened"},{"id":"x","type":"opened"}]"#)
        #expect(a.status == 400 && Self.error(a).hasPrefix("[1].id: not a notification id"), "\(a.text)")
        #expect(d.desk.calls.isEmpty)
    }

    @Test func anAppReportsEventsOfItsOwnNotifications() throws {
        let d = try Door()
        let c = try d.client()
        let path = "/api/notifications/\(Self.aliceID)/events"
        var a = try c.request("POST", path, headers: Self.alice, body: #"{"type":"received"}"#)
        #expect(a.status == 200 && a.text == #"{"id":"\#(Self.aliceID)","type":"received","status":"recorded"}"#, "\(a.text)")
        a = try c.request("POST", path, headers: Self.alice, body: #"{"type":"received"}"#)
        #expect(a.status == 200 && (a.json as? [String: String])?["status"] == "duplicate", "\(a.text)")
        a = try c.request("POST", "/apps/default\(path)", headers: Self.alice, body: #"{"type":"opened","at":"2027-01-15T08:00:30Z"}"#)
        #expect(a.status == 200 && (a.json as? [String: String])?["status"] == "recorded", "\(a.text)")
        #expect(d.desk.counted == ["\(Self.aliceID) received", "\(Self.aliceID) opened"])
        // What the desk refuses: 400 naming its field.
        d.desk.refuseAt(Self.aliceID)
        a = try c.request("POST", path, headers: Self.alice, body: #"{"type":"dismissed","at":"2020-01-01T00:00:00Z"}"#)
        #expect(a.status == 400 && Self.error(a) == "at: older than the job", "\(a.text)")
        #expect(d.desk.calls.count == 4)
    }

    @Test("bad event bodies are refused naming the field; nothing reaches the desk", arguments: [
        ("", "body: not JSON"), ("{type: received}", "body: not JSON"), (#"["received"]"#, "body: must be a JSON object"),
        (#"{}"#, "type: required"), (#"{"type":"read"}"#, #"type: must be one of received, opened, dismissed, got "read""#),
        (#"{"type":1}"#, "type: must be one of received, opened, dismissed, got number"),
        (#"{"type":"opened","at":"yesterday"}"#, "at: must be an RFC 3339 time"), (#"{"type":"opened","at":"2027-01-15T08:00:30"}"#, "at: must be an RFC 3339 time"),
        (#"{"type":"opened","when":"now"}"#, "when: unknown field (expected at, type)"),
    ])
    func badEventBodies(_ body: String, _ error: String) throws {
        let d = try Door()
        let a = try d.client().request("POST", "/api/notifications/\(Self.aliceID)/events", headers: Self.alice, body: body)
        #expect(a.status == 400 && Self.error(a).hasPrefix(error), "\(a.text)")
        #expect(!Self.error(a).contains("\n"))
        #expect(d.desk.calls.isEmpty)
    }

    /// A real desk over a SQLite registry whose write lock another process holds past the wait:
    /// `503` with `Retry-After` (as the registration routes answer an outage), never the `404`
    /// that would tell an app its notification does not exist; a batch is refused whole.
    @Test func aBusyRegistryAnswers503WithRetryAfterNot404() throws {
        let (dir, registry) = try RegistryFixture.make()
        defer { registry.close() }
        let sent = try NotificationDeskTests.send(registry)
        let auth = AuthHarness(users: [AuthFixtures.alice, AuthFixtures.bob2b])
        let api = NotificationAPI(desk: RegistryNotificationDesk(registry: registry), now: { NotificationDeskTests.sentAt.addingTimeInterval(60) })
        let door = FrontDoor(routes: api.routes, authenticator: try auth.make(), metrics: HTTPMetrics(), log: Log(handler: CollectingLogHandler()))
        let server = HTTPServer(handler: door.handle, completed: door.completed)
        defer { server.stop() }
        let c = try RawHTTPClient(port: Int(try server.start(ListenAddress(host: "127.0.0.1", port: 0)).port))
        let alices = sent.id("alice-phone")
        try registry.locked { db in try db.execute("PRAGMA busy_timeout = 50") }
        let holder = try SQLiteDatabase(path: dir.path("registry.sqlite"))
        defer { holder.close() }
        try holder.execute("BEGIN IMMEDIATE")
        var a = try c.request("GET", "/api/notifications/\(alices)", headers: Self.alice)
        #expect(a.status == 503 && a.header("Retry-After") == "5" && a.header("Cache-Control") == "no-store", "\(a.status) \(a.text)")
        #expect(Self.error(a) == "the registry is busy; try again")
        a = try c.request("GET", "/v1/notifications/\(alices)", headers: Self.service)
        #expect(a.status == 503 && a.header("Retry-After") == "5")
        a = try c.request("POST", "/api/notifications/\(alices)/events", headers: Self.alice, body: #"{"type":"opened"}"#)
        #expect(a.status == 503 && a.header("Retry-After") == "5", "\(a.status) \(a.text)")
        a = try c.request("POST", "/v1/events", headers: Self.service,
                          body: #"[{"id":"\#(alices)","type":"opened"},{"id":"\#(sent.id("bob-phone"))","type":"received"}]"#)
        #expect(a.status == 503 && a.header("Retry-After") == "5", "\(a.status) \(a.text)")
        #expect(Self.error(a) == "the registry is busy; nothing was recorded, report again")
        try holder.execute("COMMIT")
        a = try c.request("GET", "/api/notifications/\(alices)", headers: Self.alice)
        #expect(a.status == 200 && a.text.hasSuffix(#""Read":false}"#), "\(a.text)")
        a = try c.request("POST", "/v1/events", headers: Self.service, body: #"[{"id":"\#(alices)","type":"opened"}]"#)
        #expect((a.json as? [[String: String]])?.first?["status"] == "recorded", "\(a.text)")
    }

    @Test func aServiceForwardsEventsInBatchesAnsweredInOrder() throws {
        let d = try Door()
        let c = try d.client()
        let body = """
            [{"id":"\(Self.aliceID)","type":"received"},{"id":"\(Self.nobodyID)","type":"opened"},
             {"id":"\(Self.bobID)","type":"opened","at":"2027-01-15T08:00:10+01:00"},{"id":"\(Self.aliceID)","type":"received"}]
            """
        var a = try c.request("POST", "/v1/events", headers: Self.service, body: body)
        #expect(a.status == 200)
        let items = try #require(a.json as? [[String: String]], "\(a.text)")
        #expect(items.map { $0["status"] } == ["recorded", "not_found", "recorded", "duplicate"])
        #expect(items.map { $0["id"] } == [Self.aliceID, Self.nobodyID, Self.bobID, Self.aliceID])
        #expect(d.desk.calls == [.init(method: "record", ids: [Self.aliceID, Self.nobodyID, Self.bobID, Self.aliceID], user: nil)])
        d.desk.refuseAt(Self.bobID)
        a = try c.request("POST", "/v1/events", headers: Self.service, body: #"[{"id":"\#(Self.bobID)","type":"dismissed","at":"2020-01-01T00:00:00Z"}]"#)
        #expect((a.json as? [[String: String]])?.first?["error"] == "[0].at: older than the job", "\(a.text)")
        #expect(try c.request("POST", "/v1/events", headers: Self.service, body: "[]").text == "[]")
        // An app user's Basic credentials do not open the services' route.
        a = try c.request("POST", "/v1/events", headers: Self.alice, body: body)
        #expect(a.status == 401)
    }

    @Test("bad batches are refused whole, naming the field", arguments: [
        ("{}", "body: must be a JSON array of events, got object"), ("[1,", "body: not JSON"),
        (#"[{"id":"\#(NotificationRoutesTests.aliceID)","type":"received"},{"id":"\#(NotificationRoutesTests.aliceID)","type":"clicked"}]"#, "[1].type: must be one of"),
        (#"[{"type":"received"}]"#, "[0].id: required"), (#"[{"id":7,"type":"received"}]"#, "[0].id: required"),
        (#"[{"id":"\#(NotificationRoutesTests.aliceID)","type":"opened","x":1}]"#, "[0].x: unknown field (expected at, id, type)"),
        (#"["\#(NotificationRoutesTests.aliceID)"]"#, "[0]: must be an object"),
    ])
    func badBatches(_ body: String, _ error: String) throws {
        let d = try Door()
        let a = try d.client().request("POST", "/v1/events", headers: Self.service, body: body)
        #expect(a.status == 400 && Self.error(a).hasPrefix(error), "\(a.text)")
        #expect(d.desk.calls.isEmpty && d.desk.counted.isEmpty)
    }

    @Test func aThousandEventsGoThroughAndOneMoreIsRefused() throws {
        let d = try Door()
        let c = try d.client()
        func batch(_ n: Int) -> String { "[" + Array(repeating: #"{"id":"\#(Self.aliceID)","type":"opened"}"#, count: n).joined(separator: ",") + "]" }
        var a = try c.request("POST", "/v1/events", headers: Self.service, body: batch(1001))
        #expect(a.status == 400 && Self.error(a) == "body: 1001 events; at most 1000 in one request", "\(a.text)")
        #expect(d.desk.calls.isEmpty)
        a = try c.request("POST", "/v1/events", headers: Self.service, body: batch(1000))
        let items = try #require(a.json as? [[String: String]])
        #expect(items.count == 1000 && items[0]["status"] == "recorded" && items.dropFirst().allSatisfy { $0["status"] == "duplicate" })
        // The larger body is this route's alone; past it, 413 as everywhere.
        let big = String(repeating: " ", count: (64 << 10) + 1)
        a = try d.client().request("POST", "/api/notifications/\(Self.aliceID)/events", headers: Self.alice, body: big)
        #expect(a.status == 413)
        a = try d.client().request("POST", "/v1/events", headers: Self.service, body: String(repeating: " ", count: NotificationAPI.maxBatchBody + 1))
        #expect(a.status == 413)
    }
}
