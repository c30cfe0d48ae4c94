import Foundation
import Testing
import PushspoolCore

/// `tz` on registrations: an IANA zone the system's zone data knows, refused by name otherwise,
/// through every entry point that uses `RegistrationRules`.
@Suite struct ZoneNameTests {
    static let token = String(repeating: "ab", count: 32)

    @Test(arguments: ["Europe/Paris", "Asia/Kolkata", "Asia/Kathmandu", "America/New_York", "UTC", "America/Argentina/Buenos_Aires"])
    func knownZonesAreAccepted(name: String) {
        #expect(ZoneName.problem(name) == nil)
        #expect(ZoneName.timeZone(name) != nil)
    }

    @Test(arguments: ["Mars/Olympus_Mons", "Europe/Pariss", "", "../../etc/passwd", "/usr/share/zoneinfo/UTC", "Europe/Paris\n", "Europe/Parîs"])
    func unknownZonesAreRefused(name: String) {
        #expect(ZoneName.timeZone(name) == nil)
        #expect(ZoneName.problem(name)?.hasPrefix("unknown time zone ") == true)
    }

    @Test func registrationCarriesItsZone() throws {
        let r = RegistrationRules.registration(id: nil, platform: "apns", handle: .string(Self.token), tags: nil, lang: nil,
                                               tz: "Asia/Kathmandu")
        #expect(try r.get().tz == "Asia/Kathmandu")
    }

    @Test func anUnknownZoneIsOneLineNamingTheField() {
        let standard = RegistrationRules.registration(id: nil, platform: "apns", handle: .string(Self.token), tags: nil, lang: nil,
                                                      tz: "Mars/Base")
        guard case .failure(let problems) = standard else { Issue.record("accepted"); return }
        #expect(problems.description == #"tz: unknown time zone "Mars/Base" (an IANA zone name such as "Europe/Paris")"#)
        let tutorial = RegistrationRules.registration(id: nil, platform: "apns", handle: .string(Self.token), tags: nil, lang: nil,
                                                      tz: 5, names: .tutorial)
        guard case .failure(let typed) = tutorial else { Issue.record("accepted"); return }
        #expect(typed.description.hasPrefix("TimeZone: "))
    }

    @Test func registerJobsTakeTz() throws {
        let ok = try JobParser.parse(Array(#"{"kind":"register","platform":"fcm","handle":"t1","tz":"Europe/Berlin"}"#.utf8), fileName: "r.json")
        guard case .register(let r) = ok.kind else { Issue.record("not a register job"); return }
        #expect(r.tz == "Europe/Berlin")
        #expect(throws: (any Error).self) {
            try JobParser.parse(Array(#"{"kind":"register","platform":"fcm","handle":"t1","tz":"Nowhere/Land"}"#.utf8), fileName: "r.json")
        }
    }

    @Test func appsTakeADefaultZone() throws {
        let config = try ConfigParser.parse(Array(#"{"apps": {"shop": {"default_tz": "America/Chicago"}}}"#.utf8), source: "c", environment: [:])
        #expect(config.apps["shop"]?.defaultTZ == "America/Chicago")
        #expect(config.apps["shop"]?.zone(of: nil) == "America/Chicago")
        #expect(config.apps["shop"]?.zone(of: "Asia/Tokyo") == "Asia/Tokyo")
        #expect(throws: (any Error).self) { try ConfigParser.parse(Array(#"{"apps": {"shop": {"default_tz": "Chicago"}}}"#.utf8), source: "c", environment: [:]) }
    }
}
