import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore
#if canImport(Glibc)
import Glibc
#endif

/// What writers (or mistakes) can put into a spool, and races between dispatchers.
@Suite struct AdversarialSpoolTests {
    func seeded() throws -> EngineHarness {
        let h = try EngineHarness()
        try h.register("d1", .fcm, tags: ["username:alice"])
        return h
    }

    @Test("a bad re-drop of a finished job's file never erases its idempotency")
    func badRedropKeepsIdempotency() throws {
        let h = try seeded()
        let good = #"{"id":"welcome-42","to_tag":"username:alice","pns":"fcm","message":"hi"}"#
        try h.drop("welcome-42.json", good)
        let provider = ScriptedProvider()
        h.runOnce(provider)
        let doneLog = h.dir.read("spool/results/welcome-42.jsonl")
        try h.drop("welcome-42.json", #"{"id":"welcome-42","to_tag":"username:alice","pns":"fcm","mesage":"hi"}"#)
        h.runOnce(provider)
        #expect(h.dir.read("spool/results/welcome-42.jsonl") == doneLog, "the completed log is untouched")
        #expect(h.dir.list("spool/results").contains { $0.hasPrefix("welcome-42.invalid-") })
        try h.drop("welcome-42.json", good)
        let reports = h.runOnce(provider)
        #expect(reports.first?.outcome == .duplicate)
        #expect(provider.requests.count == 1, "sent once in all")
    }

    @Test("symlinks, FIFOs and directories in incoming/ are quarantined, never read or waited on")
    func nonRegularFiles() throws {
        let h = try seeded()
        h.dir.write("secret.json", #"{"private_key":"-----BEGIN PRIVATE KEY----- s3cr3t"}"#)
        symlink(h.dir.path("secret.json"), h.dir.path("spool/incoming/link.json"))
        mkfifo(h.dir.path("spool/incoming/fifo.json"), 0o600)
        mkdir(h.dir.path("spool/incoming/dir.json"), 0o700)
        let reports = h.runOnce(ScriptedProvider())
        #expect(reports.count == 3)
        #expect(Set(h.dir.list("spool/failed")) == ["link.json", "fifo.json", "dir.json"])
        #expect(h.summary("link")?.error == "the job file is a symbolic link, not a regular file")
        #expect(h.summary("fifo")?.error == "the job file is a FIFO, not a regular file")
        #expect(h.summary("dir")?.error == "the job file is a directory, not a regular file")
        let everything = h.dir.list("spool/results").map { h.dir.read("spool/results/\($0)") ?? "" }.joined()
        #expect(!everything.contains("s3cr3t") && !everything.contains("private_key"))
        #expect(h.dir.read("secret.json")?.contains("s3cr3t") == true, "the link's target is untouched")
    }

    @Test("a registration job re-dropped under the same name is applied again")
    func registrationRedrop() throws {
        let h = try seeded()
        try h.drop("reg.json", #"{"kind":"register","id":"zed","platform":"apns","handle":"\#(String(repeating: "ab", count: 32))","tags":["a"]}"#)
        h.runOnce(ScriptedProvider())
        try h.drop("reg.json", #"{"kind":"register","id":"zed","platform":"apns","handle":"\#(String(repeating: "ab", count: 32))","tags":["b"]}"#)
        let reports = h.runOnce(ScriptedProvider())
        #expect(reports.first?.outcome != .duplicate)
        #expect(try h.registry.device(id: "zed")?.tags == ["b"])
        #expect(h.dir.list("spool/results").contains { $0.hasPrefix("reg.previous-") })
    }

    @Test("a job another dispatcher holds is left alone; one that vanished is skipped, not quarantined")
    func orphanRaces() throws {
        let h = try seeded()
        h.dir.write("spool/active/held.json", #"{"id":"held","to_tag":"username:alice","pns":"fcm","message":"m"}"#)
        let holder = try JobFile(path: h.dir.path("spool/active/held.json"))
        let provider = ScriptedProvider()
        let runner = Self.runner(h, provider)
        #expect(runner.run("held.json", origin: .orphan).outcome == .busy)
        #expect(h.dir.list("spool/active") == ["held.json"])
        #expect(h.dir.list("spool/results").isEmpty)
        holder.release()
        #expect(runner.run("gone.json", origin: .orphan).outcome == .skipped)
        #expect(h.dir.list("spool/failed").isEmpty)
        #expect(h.dir.list("spool/results").isEmpty)
        #expect(provider.requests.isEmpty)
    }

    /// A job replaced between the scan's peek and the claim is judged on what was claimed: one
    /// that is not due yet goes back to incoming/ unsent, with no result log.
    @Test func aJobNotDueAfterTheClaimGoesBackToIncoming() throws {
        let h = try seeded()
        h.dir.write("spool/active/later.json", #"{"id":"later","to_tag":"username:alice","pns":"fcm","message":"m","not_before":"2099-01-01T00:00:00Z"}"#)
        let provider = ScriptedProvider()
        let runner = Self.runner(h, provider)
        #expect(runner.run("later.json", origin: .incoming).outcome == .skipped)
        #expect(h.dir.list("spool/incoming") == ["later.json"])
        #expect(h.dir.list("spool/active").isEmpty)
        #expect(h.dir.list("spool/results").isEmpty)
        #expect(provider.requests.isEmpty)
    }

    /// A runner on the harness's spool and registry, every platform routed to `provider`.
    static func runner(_ h: EngineHarness, _ provider: ScriptedProvider) -> JobRunner {
        h.concurrency = 2
        return h.makeEngine(routes: [.apns: ProviderState(provider: provider), .fcm: ProviderState(provider: provider),
                                     .wns: ProviderState(provider: provider)]).runner
    }
}
