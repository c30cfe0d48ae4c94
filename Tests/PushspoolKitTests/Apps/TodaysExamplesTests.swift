import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Everything that works today works unchanged once pushspool knows apps (README "Several
/// apps"): each example config is one app, `default`, with its top-level routes and its APNs
/// provider's topic; and the example jobs, run against a registry written by the last release,
/// deliver as before, every device as the default app.
@Suite struct TodaysExamplesTests {
    static let environment = ["PUSHSPOOL_REGISTRY": "postgresql://pushspool@db/pushspool", "WNS_CLIENT_SECRET": "x",
                              "NH_CONNECTION_STRING": "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v"]

    @Test(arguments: ["sandbox", "apns", "fcm", "wns", "azure", "webpush", "mixed", "several-hosts", "serve"])
    func anExampleConfigIsOneAppNamedDefault(_ name: String) throws {
        let url = Paths.packageRoot.appendingPathComponent("examples/config/\(name).json")
        let config = try ConfigLoader.parse(try JSONParser.parse(Array(try Data(contentsOf: url))), environment: Self.environment)
        #expect(config.appsSection == nil)
        #expect(config.defaultApp == "default")
        #expect(config.apps.count == 1)
        #expect(config.apps["default"]?.routes == config.routes)
        #expect(config.apnsTopic(of: "default") == config.apns?.topic)
        // Every provider keeps its type's name (no `type`).
        #expect(config.providers.allSatisfy { ProviderKind(rawValue: $0.key) == $0.value.kind })
    }

    @Test func theExampleJobsRunOnARegistryOfTheLastRelease() throws {
        let (dir, spool) = try initializedSpool("examples-unchanged")
        let registry = dir.path("spool/registry.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: registry + suffix) }
        try FileManager.default.copyItem(atPath: Paths.fixture("registry-v4.sqlite").path, toPath: registry)
        dir.write("pushspool.json", #"{"spool": "\#(dir.path("spool"))", "routes": {"apns": "sandbox", "fcm": "sandbox", "wns": "sandbox"}}"#)
        let args = spool + ["--config", dir.path("pushspool.json")]
        let jobs = Paths.packageRoot.appendingPathComponent("examples/jobs")
        for name in try FileManager.default.contentsOfDirectory(atPath: jobs.path) where name.hasSuffix(".json") {
            try FileManager.default.copyItem(atPath: jobs.appendingPathComponent(name).path, toPath: dir.path("spool/incoming/\(name)"))
        }
        let r = try runPushspool(["run", "--once"] + args)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(dir.list("spool/failed") == ["demo-invalid.json"])
        // alice's iPhone (APNs) of the fixture is reached, as the default app, through the sandbox.
        let alice = dir.records("spool/results/demo-notify-alice.jsonl").compactMap(\.asDelivery)
        #expect(alice.map(\.device) == ["ios-alice"], "\(alice)")
        #expect(alice.allSatisfy { $0.app == "default" && $0.status == .delivered && $0.provider == "sandbox" })
        let broadcast = dir.records("spool/results/demo-broadcast.jsonl").compactMap(\.asDelivery)
        #expect(!broadcast.isEmpty && broadcast.allSatisfy { $0.app == "default" && $0.status == .delivered })
        // The registry was migrated in place and lost nothing.
        let devices = try runPushspool(["devices", "--count"] + args)
        #expect(devices.stdout == "6\n")
    }

    @Test func theDemoStillRuns() throws {
        let dir = TempDir("examples-demo")
        let r = try runPushspool(["demo"], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
    }
}
