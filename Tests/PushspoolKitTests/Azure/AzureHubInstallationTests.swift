import Foundation
import Testing

/// The hub as a complete backend, through the real binary and the strict fake hub: registrations
/// become the hub's installations (register/unregister jobs, the CLI, import, `hub sync`), and a
/// send reaches exactly the installations its tag expression selects.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized) struct AzureHubInstallationTests {
    typealias Bench = AzureHubIntegrationTests.Bench

    static let aliceIPhone = String(repeating: "ab", count: 32)
    static let aliceChannel = "https://wns2-by3p.notify.windows.com/?token=AwYAAAD-alice"

    static func register(_ b: Bench, _ name: String, id: String, platform: String, handle: String, tags: [String],
                         lang: String? = nil) {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ", ")
        let langField = lang.map { #", "lang": "\#($0)""# } ?? ""
        b.drop(name, #"{"kind": "register", "id": "\#(id)", "platform": "\#(platform)", "handle": "\#(handle)", "tags": [\#(tagList)]\#(langField)}"#)
    }

    var installations: (Bench) -> [String: [String: Any]] = { b in
        b.hub.state()["installations"] as? [String: [String: Any]] ?? [:]
    }

    /// The fake writes installation state shortly after answering: wait until it shows `count`.
    static func waitForInstallations(_ b: Bench, _ count: Int, timeout: Double = 30,
                                     sourceLocation: SourceLocation = #_sourceLocation) -> [String: [String: Any]] {
        eventually("the hub to hold \(count) installations", timeout: timeout, poll: 0.05, sourceLocation: sourceLocation,
                   { b.hub.state()["installations"] as? [String: [String: Any]] ?? [:] }, until: { $0.count == count })
    }

    static func sends(_ b: Bench) -> [[String: Any]] { b.requests.filter { $0["status"] as? Int == 201 } }

    @Test func registerThenNotifyUserReachesExactlyHerDevices() throws {
        let b = try Bench()
        Self.register(b, "reg-1", id: "alice-iphone", platform: "apns", handle: Self.aliceIPhone, tags: ["username:alice"], lang: "en")
        Self.register(b, "reg-2", id: "alice-android", platform: "fcm", handle: "fcm-token-alice", tags: ["username:alice"])
        Self.register(b, "reg-3", id: "alice-laptop", platform: "wns", handle: Self.aliceChannel, tags: ["username:alice"])
        Self.register(b, "reg-4", id: "bob-iphone", platform: "apns", handle: String(repeating: "cd", count: 32), tags: ["username:bob"])
        var r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        let stored = Self.waitForInstallations(b, 4)
        #expect(stored["alice-iphone"]?["platform"] as? String == "apns")
        #expect(stored["alice-iphone"]?["pushChannel"] as? String == Self.aliceIPhone)
        #expect(stored["alice-iphone"]?["tags"] as? [String] == ["username:alice", "lang:en"])
        #expect(stored["alice-android"]?["platform"] as? String == "fcmv1")
        #expect(stored["alice-laptop"]?["platform"] as? String == "wns")
        // Each register job's result log records the hub's answer.
        let hubLine = try #require(b.results("reg-1").first { $0["type"] as? String == "hub" })
        #expect(hubLine["action"] as? String == "put")
        #expect(hubLine["status"] as? String == "done")
        #expect(hubLine["code"] as? String == "200")

        b.drop("notify-1", AzureHubIntegrationTests.tutorialJob)
        r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        let first = Self.sends(b)
        #expect(first.count == 3)
        let reached = Dictionary(first.map { ($0["format"] as? String ?? "", $0["reached"] as? [String] ?? []) }) { a, _ in a }
        #expect(reached == ["apple": ["alice-iphone"], "fcmV1": ["alice-android"], "windows": ["alice-laptop"]])

        b.drop("unreg", #"{"kind": "unregister", "id": "alice-android"}"#)
        r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        b.drop("notify-2", AzureHubIntegrationTests.tutorialJob)
        r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.waitForInstallations(b, 3)["alice-android"] == nil)
        let second = Array(Self.sends(b).dropFirst(3))
        let reachedNow = second.flatMap { $0["reached"] as? [String] ?? [] }.sorted()
        #expect(reachedNow == ["alice-iphone", "alice-laptop"])
        #expect(b.deliveries("notify-2").count == 3)
        b.expectNoSecrets("reg-1", r)
    }

    @Test func anUnreachableHubLeavesTheRegistrationFailedWithTheReason() throws {
        let b = try Bench(fakeArgs: ["fail-installations": "503:100"])
        Self.register(b, "reg-down", id: "dev-1", platform: "fcm", handle: "tok-1", tags: ["username:carol"])
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(b.dir.list("spool/failed").contains("reg-down.json"))
        let summary = b.summary("reg-down")
        #expect(summary["status"] as? String == "failed")
        let error = summary["error"] as? String ?? ""
        #expect(error.contains("hub put dev-1: failed after 3 attempts (503"), "\(error)")
        #expect(error.contains("hub sync"))
        // The local registry keeps the change; hub sync repairs the hub once it answers.
        let devices = try b.run(["devices"])
        #expect(devices.stdout.contains("\"dev-1\""))
    }

    @Test func cliRegisterAndUnregisterWriteThroughAndReportAHubFailure() throws {
        let b = try Bench()
        var r = try b.run(["register", "--platform", "wns", "--handle", Self.aliceChannel, "--tag", "username:alice", "--id", "w1", "--lang", "pt-br"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.waitForInstallations(b, 1)["w1"]?["tags"] as? [String] == ["username:alice", "lang:pt-BR", "lang:pt"])
        r = try b.run(["unregister", "--id", "w1"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.waitForInstallations(b, 0).isEmpty)

        let down = try Bench(fakeArgs: ["fail-installations": "500:100"])
        r = try down.run(["register", "--platform", "fcm", "--handle", "tok", "--tag", "a", "--id", "f1"])
        #expect(r.status == 74)
        #expect(r.stderr.contains("hub put f1: failed after 3 attempts"), "\(r.stderr)")
        #expect(r.stderr.contains("hub sync"))
    }

    @Test func hubSyncWritesEveryRegistrationOnceAndIsIdempotent() throws {
        let b = try Bench()
        // A registry that existed before the hub: imported while every platform went to the sandbox.
        b.dir.write("sandbox.json", #"{"spool": "spool"}"#)
        var lines = ""
        for i in 0..<10_000 {
            switch i % 3 {
            case 0: lines += #"{"id":"a\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["user:\#(i % 50)"]}"# + "\n"
            case 1: lines += #"{"id":"f\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["user:\#(i % 50)"],"lang":"fr"}"# + "\n"
            default: lines += #"{"id":"w\#(i)","platform":"wns","handle":"https://x.notify.windows.com/?t=\#(i)","tags":["user:\#(i % 50)"]}"# + "\n"
            }
        }
        b.dir.write("devices.jsonl", lines)
        var r = try runPushspool(["import", "--spool", b.spool, "--config", b.dir.path("sandbox.json"), b.dir.path("devices.jsonl")], cwd: b.dir.url)
        #expect(r.status == 0, "\(r.stderr)")

        r = try b.run(["hub", "sync"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("hub sync: 10000 installations written (apns 3334, fcm 3333, wns 3333), 0 failed"), "\(r.stdout)")
        let stored = Self.waitForInstallations(b, 10_000)
        #expect(stored.count == 10_000)
        #expect(stored["f1"]?["tags"] as? [String] == ["user:1", "lang:fr"])
        #expect(stored["w2"]?["pushChannel"] as? String == "https://x.notify.windows.com/?t=2")
        let before = try JSONSerialization.data(withJSONObject: stored, options: [.sortedKeys])

        r = try b.run(["hub", "sync"])
        #expect(r.stdout.contains("hub sync: 10000 installations written (apns 3334, fcm 3333, wns 3333), 0 failed"), "\(r.stdout)")
        let after = try JSONSerialization.data(withJSONObject: Self.waitForInstallations(b, 10_000), options: [.sortedKeys])
        #expect(before == after)
        let ops = b.hub.state()["installationOps"] as? [String: Int] ?? [:]
        #expect(ops["refused"] == 0)
    }

    @Test func importWritesItsDevicesToTheHub() throws {
        let b = try Bench()
        var lines = ""
        for i in 0..<500 { lines += #"{"id":"i\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["t"]}"# + "\n" }
        b.dir.write("devices.jsonl", lines)
        let r = try b.run(["import", b.dir.path("devices.jsonl")])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("import: 500 installations written (fcm 500), 0 failed"), "\(r.stdout)")
        #expect(Self.waitForInstallations(b, 500).count == 500)
    }

    @Test func thePortalPreviewVersionIsRefusedByTheHubAndByConfig() throws {
        let b = try Bench(azureExtra: #", "api_version": "2023-10-01-preview""#)
        let r = try b.run(["config", "--check"])
        #expect(r.status == 78)
        #expect(r.stderr.contains("providers.azure.api_version: \"2023-10-01-preview\" is a portal preview version"), "\(r.stderr)")
    }
}
