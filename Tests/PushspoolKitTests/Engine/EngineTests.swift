import Dispatch
import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

@Suite struct EngineTests {
    /// `max_jobs` bounds how many jobs one dispatcher runs at once (it was 4 whatever the config
    /// said): with every provider answer held, exactly `max_jobs` one-device jobs have a request
    /// in flight, and the others start only as those end.
    @Test(arguments: [1, 3])
    func maxJobsBoundsTheJobsRunningAtOnce(_ maxJobs: Int) throws {
        let h = try EngineHarness()
        for i in 0..<6 {
            try h.register("d\(i)", .fcm, tags: ["only:\(i)"])
            try h.drop("j\(i).json", #"{"id":"j\#(i)","tags":"only:\#(i)","pns":"gcm","message":"m"}"#)
        }
        let gate = DispatchSemaphore(value: 0)
        let provider = ScriptedProvider { _ in
            // Held until the test has looked; released at most after 20 s whatever happens.
            _ = gate.wait(timeout: .now() + 20)
            return ProviderResult(.delivered, code: "200")
        }
        let state = ProviderState(provider: provider)
        let reports = ReportList()
        let engine = h.makeEngine(routes: [.apns: state, .fcm: state, .wns: state], reports: reports, maxJobs: maxJobs)
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            engine.runOnce()
            finished.signal()
        }
        // Wait (generously) for the slots to fill, then give a job beyond the bound time to show up.
        let deadline = Date().addingTimeInterval(15)
        while provider.requests.count < maxJobs && Date() < deadline { usleep(10_000) }
        usleep(100_000)
        let started = provider.requests.count
        for _ in 0..<6 { gate.signal() }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(started == maxJobs)
        #expect(provider.maxInFlight == maxJobs)
        #expect(reports.all.count == 6)
        #expect(h.list(.done).count == 6)
    }

    /// A config problem found while building a provider's transport stops the engine at start,
    /// naming the field, instead of failing every request later.
    @Test func aCAFileOpenSSLCannotReadIsASetupError() throws {
        let dir = TempDir("pushspool-engine-ca")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
        dir.write("vapid.pem", try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8))
        var config = try ConfigLoader.parse(try JSONParser.parse(#"""
            {"routes": {"web": "webpush"}, "tls": {"ca_file": "ca.pem"},
             "providers": {"webpush": {"vapid_private_key_file": "vapid.pem", "subject": "mailto:ops@example.com"}}}
            """#))
        config.baseDirectory = dir.url
        config.spool = spool.root.path
        #expect {
            _ = try Engine(config: config, spool: spool, hooks: Engine.Hooks(log: Log(minimum: .error)))
        } throws: { error in
            guard let error = error as? EngineSetupError else { return false }
            return error.kind == .config && error.problems == ["tls.ca_file: ca.pem holds no PEM certificate OpenSSL can read"]
        }
    }
}
