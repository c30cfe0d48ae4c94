import Foundation
import Testing

/// The tutorial's apps against `serve` + `run` + the fake APNs, FCM and WNS, request for request.
/// Alice's iPhone speaks as the tutorial's iOS client does (NSURLSession's headers, the token in
/// uppercase hex, a pretty-printed body, an id stored from an earlier install that is gone: 410,
/// a new id, the PUT again); her Android and Windows devices as those clients do; then bob's app
/// sends "hi" to alice on each platform, and each of alice's devices gets exactly `From bob: hi`
/// in its service's native format.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct TutorialClientReplayTests {
    static let iPhoneToken = String(repeating: "5A1C", count: 16)   // uppercase hex, as the app sends it

    /// NSURLSession's request, byte for byte as CFNetwork writes it.
    static func iOS(_ method: String, _ target: String, port: Int, user: String, body: String?, contentType: String?) -> String {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        head += "Accept: */*\r\nAuthorization: \(FrontDoorFiles.basic(user))\r\nAccept-Language: en-US,en;q=0.9\r\n"
        head += "Content-Length: \((body ?? "").utf8.count)\r\nAccept-Encoding: gzip, deflate\r\n"
        head += "User-Agent: NotifyUsers/1 CFNetwork/1408.0.4 Darwin/22.5.0\r\nConnection: keep-alive\r\n\r\n"
        return head + (body ?? "")
    }

    /// `NSJSONSerialization` with `NSJSONWritingPrettyPrinted`, as the iOS client encodes its registration.
    static func prettyRegistration(_ token: String) -> String {
        "{\n  \"Platform\" : \"apns\",\n  \"Handle\" : \"\(token)\",\n  \"Tags\" : [\n\n  ]\n}"
    }

    @Test func theTutorialsAppsWorkUnchanged() throws {
        let h = try PushCloudHarness(fcmArgs: [:], wnsArgs: [:], apnsArgs: [:])
        FrontDoorFiles.write(into: h.dir)
        let config = h.dir.read("pushspool.json") ?? ""
        h.dir.write("pushspool.json", "{" + FrontDoorFiles.section() + "," + config.drop { $0 != "{" }.dropFirst())
        let serve = try ServeProcess(config: h.configPath, cwd: h.dir.url, env: ["TEST_WNS_SECRET": PushCloudHarness.clientSecret])
        let port = serve.port

        // Alice's iPhone: the id it stored before is gone (410), so it asks for a new one and PUTs again.
        let iPhone = try serve.client()
        try iPhone.send(Self.iOS("PUT", "/api/register/3c1f5e0a-0d3e-4b8e-9d7c-5f2b6a1e9c44", port: port, user: "alice",
                                 body: Self.prettyRegistration(Self.iPhoneToken), contentType: "application/json"))
        var a = try iPhone.answer()
        #expect(a.status == 410, "\(a.text)")
        try iPhone.send(Self.iOS("POST", "/api/register?handle=\(Self.iPhoneToken)", port: port, user: "alice", body: nil, contentType: nil))
        a = try iPhone.answer()
        #expect(a.status == 200)
        // The client takes the body's characters between the first and the last: the id.
        let text = a.text
        let id = String(text.dropFirst().dropLast())
        #expect(text == "\"\(id)\"" && UUID(uuidString: id) != nil, "the body must be the id as a bare JSON string: \(text)")
        try iPhone.send(Self.iOS("PUT", "/api/register/\(id)", port: port, user: "alice",
                                 body: Self.prettyRegistration(Self.iPhoneToken), contentType: "application/json"))
        a = try iPhone.answer()
        #expect(a.status == 200, "\(a.text)")
        // Asked again (the app starts again), the same device's id comes back.
        try iPhone.send(Self.iOS("POST", "/api/register?handle=\(Self.iPhoneToken)", port: port, user: "alice", body: nil, contentType: nil))
        #expect(try iPhone.answer().text == "\"\(id)\"")

        // Her Android phone (the FCM client, still saying gcm) and her Windows PC (a WNS channel URI,
        // URL-encoded in the query): compact JSON, as their HTTP clients send it.
        let channel = "\(try #require(h.wns).url)/ch/ok-1?token=x"
        for (platform, handle) in [("gcm", "ok-1"), ("wns", channel)] {
            let c = try serve.client()
            let query = handle.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? handle
            let given = try c.request("POST", "/api/register?handle=\(query)", headers: [("Authorization", FrontDoorFiles.basic("alice"))], body: "")
            let deviceID = try #require(given.json as? String, "\(given.text)")
            let body = #"{"Platform":"\#(platform)","Handle":"\#(handle.replacingOccurrences(of: "/", with: "\\/"))","Tags":[]}"#
            let put = try c.request("PUT", "/api/register/\(deviceID)", headers: [("Authorization", FrontDoorFiles.basic("alice")),
                                                                                  ("Content-Type", "application/json; charset=utf-8")], body: body)
            #expect(put.status == 200, "\(platform): \(put.text)")
        }

        // Bob's app sends "hi" to alice, once per platform, as the iOS client's send button does.
        let bob = try serve.client()
        var jobs: [String] = []
        for pns in ["apns", "gcm", "wns"] {
            try bob.send(Self.iOS("POST", "/api/notifications?pns=\(pns)&to_tag=alice", port: port, user: "bob",
                                  body: "\"hi\"", contentType: "application/json;charset=utf-8"))
            let sent = try bob.answer()
            #expect(sent.status == 200, "\(pns): \(sent.text)")
            jobs.append(try #require((sent.json as? [String: String])?["id"]))
            // Durable before the answer: the job file is already in incoming/.
            #expect(h.dir.list("spool/incoming").contains("\(jobs.last!).json"))
        }

        let run = try h.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        for job in jobs { #expect(h.summary(job)?.int("delivered") == 1, "\(job): \(h.results(job))") }
        let apns = waitForIdle(try #require(h.apns), answered: 1)
        let token = Self.iPhoneToken.lowercased()
        #expect(apns.dict("perToken")?.int(token) == 1, "one APNs request for the iPhone: \(apns)")
        #expect(apns.dict("lastHeaders")?.dict(token)?.dict("payload")?.dict("aps")?.str("alert") == "From bob: hi")
        #expect(try #require(h.fcm).state().dict("perToken")?.dict("ok-1")?.dict("message")?.dict("data") as? [String: String]
                == ["message": "From bob: hi"])
        #expect(try #require(h.wns).state().dict("perChannel")?.dict("ok-1")?.list("texts") as? [String] == ["From bob: hi"])
        // The access log has each request, and no token or password.
        #expect(serve.log.contains("PUT /api/register/{id} 410") && serve.log.contains("POST /api/notifications 200"), "\(serve.log)")
        #expect(!serve.log.contains(Self.iPhoneToken) && !serve.log.contains(token) && !serve.log.contains("s3cret"))
    }
}
