import Testing
@testable import PushspoolCore

/// The one list of provider names: what each delivers to, and the lists derived from it.
@Suite struct ProviderKindTests {
    @Test func whatEachProviderDelivers() {
        for platform in Platform.allCases {
            #expect(ProviderKind.sandbox.delivers(platform))
            #expect(ProviderKind.azure.delivers(platform) == (platform != .web))
        }
        #expect(ProviderKind.apns.delivers(.apns) && !ProviderKind.apns.delivers(.fcm))
        #expect(ProviderKind.webpush.delivers(.web) && !ProviderKind.webpush.delivers(.wns))
        #expect(ProviderKind.fcm.delivers(.fcm) && ProviderKind.wns.delivers(.wns))
    }

    @Test func theConfigsListsComeFromIt() {
        #expect(ConfigParser.providerNames == ["apns", "fcm", "wns", "webpush", "azure", "sandbox"])
        #expect(Set(Config.connectingProviders) == ["apns", "fcm", "wns", "webpush", "azure"])
    }

    @Test func aRouteToAProviderThatCannotDeliverIsAProblem() throws {
        let config: JSONValue = .object([("spool", "/tmp/s"), ("routes", .object([("web", "apns")]))])
        let error = #expect(throws: ConfigError.self) { try ConfigParser.parse(config) }
        #expect(error?.problems.contains { $0.contains("routes.web") && $0.contains("cannot deliver to web") } == true)
    }
}
