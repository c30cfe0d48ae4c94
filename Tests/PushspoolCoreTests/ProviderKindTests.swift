import Testing
@testable import PushspoolCore

/// The one list of provider names: what each delivers to, and the lists derived from it.
@Suite struct ProviderKindTests {
    @Test func whatEachProviderDelivers() {
        for platform in Platform.allCases {
            #expect(ProviderKind.sandbox.delivers(platform))
            #expect(ProviderKind.azure.delivers(platform) == ![.web, .hms, .adm].contains(platform))
        }
        #expect(ProviderKind.apns.delivers(.apns) && !ProviderKind.apns.delivers(.fcm))
        #expect(ProviderKind.webpush.delivers(.web) && !ProviderKind.webpush.delivers(.wns))
        #expect(ProviderKind.fcm.delivers(.fcm) && ProviderKind.wns.delivers(.wns))
        #expect(ProviderKind.hms.delivers(.hms) && !ProviderKind.hms.delivers(.fcm))
        #expect(ProviderKind.adm.delivers(.adm) && !ProviderKind.adm.delivers(.hms))
    }

    @Test func theConfigsListsComeFromIt() {
        #expect(ConfigParser.providerNames == ["apns", "fcm", "wns", "webpush", "azure", "sandbox", "hms", "adm"])
        #expect(Set(Config.connectingProviders) == ["apns", "fcm", "wns", "webpush", "azure", "hms", "adm"])
    }

    @Test func aRouteToAProviderThatCannotDeliverIsAProblem() throws {
        let config: JSONValue = .object([("spool", "/tmp/s"), ("routes", .object([("web", "apns")]))])
        let error = #expect(throws: ConfigError.self) { try ConfigParser.parse(config) }
        #expect(error?.problems.contains { $0.contains("routes.web") && $0.contains("cannot deliver to web") } == true)
    }
}
