import Foundation
import Testing

/// The front door with several apps: the tutorial's API at `/apps/{app}/api/…` (and the default
/// app at `/api/…`), its `Environment` field, `PUT /v1/devices/{id}` with `app` and
/// `environment`, `GET /v1/devices?app=`, and each refusal naming its field. Against the real
/// binary, read back through `pushspool devices` and the device API.
@Suite(.serialized) struct AppsFrontDoorTests {
    static let handle = String(repeating: "c7", count: 32)
    /// Two apps; `shop` is the default, so `chat` is reached only by naming it.
    static let apps = #""apps": {"chat": {}, "shop": {}}, "default_app": "shop", "#

    static func user(_ name: String) -> [(String, String)] { [("Authorization", FrontDoorFiles.basic(name))] }
    static let service = [("Authorization", FrontDoorFiles.bearer)]

    static func error(_ a: RawHTTPClient.Answer) -> String { ((a.json as? [String: Any])?["error"] as? String) ?? a.text }
    static func object(_ a: RawHTTPClient.Answer) -> [String: Any] { (a.json as? [String: Any]) ?? [:] }

    static func newID(_ c: RawHTTPClient, _ prefix: String, _ who: String = "alice") throws -> String {
        let a = try c.request("POST", "\(prefix)/register?handle=\(handle)", headers: user(who))
        return try #require(a.json as? String, "\(a.status) \(a.text)")
    }

    static func put(_ c: RawHTTPClient, _ prefix: String, _ id: String, _ extra: String = "", platform: String = "apns",
                    handle: String = handle) throws -> RawHTTPClient.Answer {
        try c.request("PUT", "\(prefix)/register/\(id)", headers: user("alice"),
                      body: #"{"Platform": "\#(platform)", "Handle": "\#(handle)", "Tags": []\#(extra)}"#)
    }

    @Test("a registration at /apps/chat/api lands in chat with its environment; the same handle at /api is another device")
    func theTutorialAtAnAppsPathRegistersInThatApp() throws {
        let f = try SandboxFrontDoor(top: Self.apps)
        let c = try f.serve.client()
        let chatID = try Self.newID(c, "/apps/chat/api")
        var a = try Self.put(c, "/apps/chat/api", chatID, #", "Environment": "development""#)
        #expect(a.status == 200, "\(a.text)")
        var listed = try f.cli(["devices", "--app", "chat"]).stdout
        #expect(listed.contains(#""id":"\#(chatID)","platform":"apns","app":"chat","environment":"development""#), "\(listed)")
        a = try c.request("GET", "/v1/devices/\(chatID)", headers: Self.service)
        #expect(Self.object(a)["app"] as? String == "chat" && Self.object(a)["environment"] as? String == "development", "\(a.text)")

        // The same push token in the default app: not found there, so a new id and a second device.
        let shopID = try Self.newID(c, "/api")
        #expect(shopID != chatID)
        a = try Self.put(c, "/api", shopID)
        #expect(a.status == 200, "\(a.text)")
        #expect(try f.cli(["devices", "--count"]).stdout == "2\n")
        listed = try f.cli(["devices", "--app", "shop"]).stdout
        #expect(listed.contains(#""id":"\#(shopID)","platform":"apns","app":"shop","environment":"production""#), "\(listed)")
        // Each path finds the handle within its own app.
        #expect(try Self.newID(c, "/apps/chat/api") == chatID)
        #expect(try Self.newID(c, "/api") == shopID)
        #expect(try Self.newID(c, "/apps/shop/api") == shopID)
        // Keys in any case, as the tutorial's; `sandbox` is `development`'s alias. A PUT without
        // it is a production device: the PUT replaces the registration whole.
        a = try Self.put(c, "/apps/chat/api", chatID)
        #expect(a.status == 200, "\(a.text)")
        #expect(Self.object(try c.request("GET", "/v1/devices/\(chatID)", headers: Self.service))["environment"] as? String == "production")
        a = try Self.put(c, "/apps/chat/api", chatID, #", "environment": "sandbox""#)
        #expect(a.status == 200, "\(a.text)")
        #expect(Self.object(try c.request("GET", "/v1/devices/\(chatID)", headers: Self.service))["environment"] as? String == "development")
        #expect(try c.request("DELETE", "/apps/chat/api/register/\(chatID)", headers: Self.user("alice")).status == 200)
        #expect(try f.cli(["devices", "--app", "chat", "--count"]).stdout == "0\n")
        #expect(try f.cli(["devices", "--app", "shop", "--count"]).stdout == "1\n")
    }

    @Test("without apps the one app is default: /apps/default/api is /api, and listings stay as they were")
    func withoutAppsTheOneAppIsDefault() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let id = try Self.newID(c, "/apps/default/api")
        #expect(try Self.put(c, "/apps/default/api", id).status == 200)
        #expect(try Self.newID(c, "/api") == id)
        let a = try c.request("GET", "/v1/devices/\(id)", headers: Self.service)
        #expect(a.status == 200 && Self.object(a)["app"] == nil && Self.object(a)["environment"] == nil, "\(a.text)")
        let b = try c.request("POST", "/apps/chat/api/register?handle=\(Self.handle)", headers: Self.user("alice"))
        #expect(b.status == 404 && Self.error(b) == #"app: unknown app "chat" (expected default)"#, "\(b.text)")
    }

    @Test("each refusal names its field; an unknown app in the path is 404")
    func badInputNamesItsField() throws {
        let f = try SandboxFrontDoor(top: Self.apps)
        let c = try f.serve.client()
        let id = try Self.newID(c, "/apps/chat/api")
        var a = try Self.put(c, "/apps/chat/api", id, #", "Environment": "staging""#)
        #expect(a.status == 400 && Self.error(a).hasPrefix(#"Environment: must be "production" or "development""#), "\(a.text)")
        a = try Self.put(c, "/apps/chat/api", id, #", "Environment": "development""#, platform: "fcm", handle: "fcm-token-1")
        #expect(a.status == 400 && Self.error(a).hasPrefix("Environment: only APNs devices have an environment"), "\(a.text)")
        a = try Self.put(c, "/apps/chat/api", id, #", "App": "shop""#)
        #expect(a.status == 400 && Self.error(a).hasPrefix("App: unknown field"), "\(a.text)")

        for (method, path) in [("POST", "/apps/blog/api/register?handle=\(Self.handle)"), ("PUT", "/apps/blog/api/register/\(id)"),
                               ("DELETE", "/apps/blog/api/register/\(id)"), ("POST", "/apps/blog/api/notifications?pns=apns&to_tag=bob")] {
            a = try c.request(method, path, headers: Self.user("alice"), body: method == "POST" ? #""hi""# : #"{"Platform": "apns"}"#)
            #expect(a.status == 404 && Self.error(a) == #"app: unknown app "blog" (expected chat, shop)"#, "\(method) \(path): \(a.text)")
        }
        a = try c.request("POST", "/apps/bad%20app/api/register?handle=\(Self.handle)", headers: Self.user("alice"))
        #expect(a.status == 404 && Self.error(a).hasPrefix("app: "), "\(a.text)")

        func putDevice(_ body: String) throws -> RawHTTPClient.Answer {
            try c.request("PUT", "/v1/devices/svc-1", headers: Self.service, body: body)
        }
        a = try putDevice(#"{"platform": "apns", "handle": "\#(Self.handle)", "tags": [], "app": "blog"}"#)
        #expect(a.status == 400 && Self.error(a) == #"app: unknown app "blog" (expected chat, shop)"#, "\(a.text)")
        a = try putDevice(#"{"platform": "fcm", "handle": "fcm-token-1", "tags": [], "environment": "production"}"#)
        #expect(a.status == 400 && Self.error(a).hasPrefix("environment: only APNs devices have an environment"), "\(a.text)")
        a = try putDevice(#"{"platform": "apns", "handle": "\#(Self.handle)", "tags": [], "environment": "staging"}"#)
        #expect(a.status == 400 && Self.error(a).hasPrefix(#"environment: must be "production" or "development""#), "\(a.text)")
        a = try putDevice(#"{"platform": "apns", "handle": "\#(Self.handle)", "tags": [], "app": 7}"#)
        #expect(a.status == 400 && Self.error(a).hasPrefix("app: "), "\(a.text)")
        a = try c.request("GET", "/v1/devices?app=chat,blog", headers: Self.service)
        #expect(a.status == 400 && Self.error(a) == #"app: unknown app "blog" (expected chat, shop)"#, "\(a.text)")
        // Nothing was saved by any of them.
        #expect(try f.cli(["devices", "--count"]).stdout == "0\n")
    }

    @Test func theDeviceAPITakesAppAndEnvironment() throws {
        let f = try SandboxFrontDoor(top: Self.apps)
        let c = try f.serve.client()
        var a = try c.request("PUT", "/v1/devices/svc-chat", headers: Self.service,
                              body: #"{"platform": "apns", "handle": "\#(Self.handle)", "tags": ["t"], "app": "chat", "environment": "sandbox"}"#)
        #expect(a.status == 200 && Self.object(a)["app"] as? String == "chat" && Self.object(a)["environment"] as? String == "development",
                "\(a.text)")
        // The same token in the default app is a second device, not a move.
        a = try c.request("PUT", "/v1/devices/svc-shop", headers: Self.service,
                          body: #"{"platform": "apns", "handle": "\#(Self.handle)", "tags": ["t"]}"#)
        #expect(a.status == 200 && Self.object(a)["app"] as? String == "shop" && Self.object(a)["environment"] as? String == "production"
                && Self.object(a)["moved_from"] is NSNull, "\(a.text)")
        a = try c.request("GET", "/v1/devices?tags=t&app=chat", headers: Self.service)
        let lines = a.text.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(#""id":"svc-chat","platform":"apns","app":"chat","environment":"development""#), "\(a.text)")
        a = try c.request("GET", "/v1/devices?app=chat,shop&count=1", headers: Self.service)
        #expect(Self.object(a)["count"] as? Int == 2, "\(a.text)")
        a = try c.request("GET", "/v1/devices?app=shop&count=1", headers: Self.service)
        #expect(Self.object(a)["count"] as? Int == 1, "\(a.text)")
        a = try c.request("GET", "/v1/devices/svc-shop", headers: Self.service)
        #expect(Self.object(a)["app"] as? String == "shop", "\(a.text)")
        // Ids are global: DELETE needs no app.
        #expect(try c.request("DELETE", "/v1/devices/svc-chat", headers: Self.service).status == 200)
        #expect(try f.cli(["devices", "--app", "chat", "--count"]).stdout == "0\n")
    }

    @Test("a notification at /apps/chat/api is a job for chat, delivered to chat's device only")
    func aNotificationAtAnAppsPathIsThatAppsJob() throws {
        let f = try SandboxFrontDoor(top: Self.apps)
        let c = try f.serve.client()
        let chatID = try Self.newID(c, "/apps/chat/api")
        #expect(try Self.put(c, "/apps/chat/api", chatID).status == 200)
        let shopID = try Self.newID(c, "/api")
        #expect(try Self.put(c, "/api", shopID).status == 200)

        var a = try c.request("POST", "/apps/chat/api/notifications?pns=apns&to_tag=alice", headers: Self.user("bob"), body: #""hi""#)
        #expect(a.status == 200, "\(a.text)")
        let chatJob = try #require(Self.object(a)["id"] as? String)
        let job = try #require(try JSONSerialization.jsonObject(with: Data((f.dir.read("spool/incoming/\(chatJob).json") ?? "").utf8)) as? [String: Any])
        #expect(job["app"] as? String == "chat", "\(job)")
        // At /api the job is as before: no app, so the default app's.
        a = try c.request("POST", "/api/notifications?pns=apns&to_tag=alice", headers: Self.user("bob"), body: #""hi""#)
        let plainJob = try #require(Self.object(a)["id"] as? String)
        #expect(f.dir.read("spool/incoming/\(plainJob).json")?.contains(#""app""#) == false)

        let run = try f.cli(["run", "--once"])
        #expect(run.status == 0, "\(run.stderr)")
        let chatResults = f.dir.jsonLines("spool/results/\(chatJob).jsonl").filter { $0["device"] != nil }
        #expect(chatResults.map { $0["device"] as? String } == [chatID], "\(chatResults)")
        #expect(chatResults.first?["app"] as? String == "chat", "\(chatResults)")
        let shopResults = f.dir.jsonLines("spool/results/\(plainJob).jsonl").filter { $0["device"] != nil }
        #expect(shopResults.map { $0["device"] as? String } == [shopID], "\(shopResults)")
    }
}
