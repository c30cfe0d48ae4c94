import Foundation
import Testing

/// `tz` through the front door: `PUT /v1/devices/{id}` and its GET, the tutorial's `TimeZone`,
/// each unknown zone a 400 naming its field; and `devices --by tz` over what they registered.
@Suite(.serialized) struct ZoneFrontDoorTests {
    static let handle = String(repeating: "d4", count: 32)

    @Test func theDeviceAPIAndTheTutorialTakeATimeZone() throws {
        let f = try SandboxFrontDoor(top: #""apps": {"shop": {"default_tz": "Europe/Paris"}}, "#)
        let c = try f.serve.client()
        var a = try c.request("PUT", "/v1/devices/svc-1", headers: AppsFrontDoorTests.service,
                              body: #"{"platform": "fcm", "handle": "fcm-token-1", "tags": [], "tz": "Asia/Kathmandu"}"#)
        #expect(a.status == 200 && AppsFrontDoorTests.object(a)["tz"] as? String == "Asia/Kathmandu", "\(a.text)")
        a = try c.request("GET", "/v1/devices/svc-1", headers: AppsFrontDoorTests.service)
        #expect(AppsFrontDoorTests.object(a)["tz"] as? String == "Asia/Kathmandu", "\(a.text)")
        a = try c.request("PUT", "/v1/devices/svc-2", headers: AppsFrontDoorTests.service,
                          body: #"{"platform": "fcm", "handle": "fcm-token-2", "tags": [], "tz": "Mars/Base"}"#)
        #expect(a.status == 400 && AppsFrontDoorTests.error(a) == #"tz: unknown time zone "Mars/Base" (an IANA zone name such as "Europe/Paris")"#, "\(a.text)")

        let id = try AppsFrontDoorTests.newID(c, "/api")
        a = try c.request("PUT", "/api/register/\(id)", headers: AppsFrontDoorTests.user("alice"),
                          body: #"{"Platform": "apns", "Handle": "\#(Self.handle)", "Tags": [], "TimeZone": "Asia/Kolkata"}"#)
        #expect(a.status == 200, "\(a.text)")
        #expect(AppsFrontDoorTests.object(try c.request("GET", "/v1/devices/\(id)", headers: AppsFrontDoorTests.service))["tz"] as? String
                == "Asia/Kolkata")
        a = try c.request("PUT", "/api/register/\(id)", headers: AppsFrontDoorTests.user("alice"),
                          body: #"{"Platform": "apns", "Handle": "\#(Self.handle)", "Tags": [], "TimeZone": "Kolkata"}"#)
        #expect(a.status == 400 && AppsFrontDoorTests.error(a).hasPrefix(#"TimeZone: unknown time zone "Kolkata""#), "\(a.text)")

        // A device without tz counts in its app's default_tz.
        a = try c.request("PUT", "/v1/devices/svc-3", headers: AppsFrontDoorTests.service,
                          body: #"{"platform": "fcm", "handle": "fcm-token-3", "tags": []}"#)
        #expect(a.status == 200, "\(a.text)")
        let byZone = try f.cli(["devices", "--by", "tz"]).stdout
        #expect(byZone == #"""
            {"tz":"Asia/Kathmandu","devices":1}
            {"tz":"Asia/Kolkata","devices":1}
            {"tz":"Europe/Paris","devices":1}

            """#, "\(byZone)")
    }
}
