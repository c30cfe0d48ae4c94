import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Each app's broadcast channels in the registry, on both backends: saved, read per app, replaced
/// by Apple's list (keeping what is known, dropping what Apple no longer has), removed.
@Suite struct RegistryChannelTests {
    static func channel(_ id: String, _ app: String = "default", policy: Int = 0, at t: Double = 1_700_000_000) -> APNsChannel {
        APNsChannel(id: id, app: app, environment: .production, storagePolicy: policy, createdAt: Date(timeIntervalSince1970: t))
    }

    @Test(arguments: RegistryBackend.allCases) func channelsBelongToTheirApp(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        try registry.saveChannel(Self.channel("Y2gx", policy: 1))
        try registry.saveChannel(Self.channel("Y2gy", at: 1_700_000_001))
        try registry.saveChannel(Self.channel("Y2gx", "shop"))
        #expect(try registry.channels(app: "default").map(\.id) == ["Y2gx", "Y2gy"])
        #expect(try registry.channel(app: "default", id: "Y2gx")?.storagePolicy == 1)
        #expect(try registry.channel(app: "chat", id: "Y2gx") == nil)
        // Apple's list: Y2gy gone, Y2gz new; Y2gx keeps its recorded policy and time.
        try registry.replaceChannels(app: "default", environment: .production,
                                     with: [Self.channel("Y2gx", at: 1_800_000_000), Self.channel("Y2gz", policy: 1, at: 1_700_000_002)])
        let now = try registry.channels(app: "default")
        #expect(now.map(\.id) == ["Y2gx", "Y2gz"])
        #expect(now.first?.storagePolicy == 1 && now.first?.createdAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(try registry.removeChannel(app: "default", id: "Y2gx"))
        #expect(try !registry.removeChannel(app: "default", id: "Y2gx"))
        #expect(try registry.channels(app: "shop").map(\.id) == ["Y2gx"])
    }
}
