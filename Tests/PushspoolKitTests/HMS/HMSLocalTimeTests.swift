import Foundation
import Testing

/// A `local_time` campaign to Huawei devices through the fake Push Kit, on an injected clock:
/// each zone's devices go in their own wave (their own requests), each token once.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSLocalTimeTests {
    @Test func eachZoneGetsItsWaveAndEachTokenGoesOnce() throws {
        let h = try PushCloudHarness(hmsArgs: [:])
        let zones = [("Asia/Kolkata", "2027-03-14T03:30:00.000Z"), ("Europe/Paris", "2027-03-14T08:00:00.000Z"), ("UTC", "2027-03-14T09:00:00.000Z")]
        var lines = ""
        for (z, entry) in zones.enumerated() {
            for i in 0..<5 { lines += #"{"id":"d\#(z)-\#(i)","platform":"hms","handle":"tok-\#(z)-\#(i)","tags":["all"],"tz":"\#(entry.0)"}"# + "\n" }
        }
        h.dir.write("devices.jsonl", lines)
        #expect(try h.cli(["import", h.dir.path("devices.jsonl")]).status == 0)
        h.drop("nine", #"{"id": "nine", "to_tag": "all", "pns": ["hms"], "message": "good morning", "local_time": "09:00", "local_date": "2027-03-14"}"#)
        let run = try BackgroundRun(["run", "--config", h.configPath], cwd: h.dir.url,
                                    env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T03:00:00Z*10800", "TEST_HMS_SECRET": "hms-secret"])
        #expect(eventually("the job to end", timeout: 60, lastSeen: { run.tail() }) {
            FileManager.default.fileExists(atPath: h.dir.path("spool/done/nine.json"))
        })
        run.terminate()
        run.waitUntilExit()

        // Device → the wave its delivery line precedes.
        var pending: [String] = [], wave: [String: String] = [:], times: [String: Int] = [:]
        for line in h.results("nine") {
            if line["type"] as? String == "delivery", let device = line["device"] as? String, line["status"] as? String == "delivered" {
                pending.append(device)
                times[device, default: 0] += 1
            } else if line["type"] as? String == "wave", line["status"] as? String == "sent" {
                for d in pending { wave[d] = line["at"] as? String }
                pending = []
            }
        }
        for (z, entry) in zones.enumerated() {
            for i in 0..<5 { #expect(wave["d\(z)-\(i)"] == entry.1, "d\(z)-\(i) in \(entry.0)") }
        }
        #expect(times.count == 15 && times.values.allSatisfy { $0 == 1 })
        let s = try #require(h.hms).syncedState()
        #expect(s.int("delivered") == 15 && s.int("duplicateDeliveries") == 0)
        #expect(((s.list("tokensPerSend") as? [Int]) ?? []).count >= 3, "the waves shared a request")
    }
}
