import Foundation
import Testing

/// Huawei and Amazon devices through the front door (the tutorial's `Platform`, `/v1/devices`,
/// `register`), and the did-you-mean listing every platform. Against the real binary.
@Suite(.serialized) struct HMSADMFrontDoorTests {
    @Test("the tutorial registers hms and adm devices; /v1/devices and register take them; an unknown platform lists all six")
    func huaweiAndAmazonDevicesEnterThroughTheFrontDoor() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let user = [("Authorization", FrontDoorFiles.basic("alice"))], service = [("Authorization", FrontDoorFiles.bearer)]
        for (platform, handle) in [("hms", "IQAAAACy0kYSAADx"), ("adm", "amzn1.adm-registration.v3.Y29tLmFt")] {
            let registered = try c.request("POST", "/api/register?handle=\(handle)", headers: user)
            let id = try #require(registered.json as? String, "\(registered.text)")
            var a = try c.request("PUT", "/api/register/\(id)", headers: user,
                                  body: #"{"Platform": "\#(platform)", "Handle": "\#(handle)", "Tags": []}"#)
            #expect(a.status == 200, "\(a.text)")
            a = try c.request("GET", "/v1/devices/\(id)", headers: service)
            #expect((a.json as? [String: Any])?["platform"] as? String == platform, "\(a.text)")
        }
        var a = try c.request("PUT", "/v1/devices/fire", headers: service, body: #"{"platform": "adm", "handle": "bad/id", "tags": []}"#)
        #expect(a.status == 400 && a.text.contains("an ADM registration id holds only"), "\(a.text)")
        a = try c.request("PUT", "/v1/devices/x", headers: service, body: #"{"platform": "hmss", "handle": "t", "tags": []}"#)
        #expect(a.status == 400 && a.text.contains("apns, fcm, gcm, wns, web, hms, adm"), "\(a.text)")
        var r = try f.cli(["register", "--platform", "hms", "--handle", "IQAAAACy0kYSAADy", "--tag", "huawei"])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        // The command line's own one-line errors: an unknown platform lists all six, a bad handle says why.
        r = try f.cli(["register", "--platform", "hmss", "--handle", "x", "--tag", "a"])
        #expect(r.status == 64 && r.stderr == "pushspool: register: --platform: unknown platform \"hmss\" (expected apns, fcm, gcm, wns, web, hms, adm)\n", "\(r.stderr)")
        r = try f.cli(["devices", "--platform", "admm"])
        #expect(r.status == 64 && r.stderr.hasSuffix(#"unknown platform "admm" (expected apns, fcm, gcm, wns, web, hms, adm)"# + "\n"), "\(r.stderr)")
        r = try f.cli(["register", "--platform", "adm", "--handle", "bad/id", "--tag", "a"])
        #expect(r.status == 65 && r.stderr == "pushspool: register: --handle: an ADM registration id holds only letters, digits and - _ . ~ + = :\n", "\(r.stderr)")
        f.dir.write("d.jsonl", #"{"platform": "hmz", "handle": "x", "tags": ["a"]}"# + "\n")
        r = try f.cli(["import", f.dir.path("d.jsonl")])
        #expect(r.status == 65 && r.stderr.contains(#"line 1: platform: unknown platform "hmz" (expected apns, fcm, gcm, wns, web, hms, adm)"#), "\(r.stderr)")
    }
}
