import Foundation
import PushspoolCore
import PushspoolHTTP
import Synchronization
import Testing
@testable import PushspoolKit

@Suite struct SandboxProviderTests {
    static func request(_ i: Int, job: String) -> SendRequest {
        let device = Device(id: "d\(i)", platform: .apns, handle: String(format: "%064x", i), tags: [], updatedAt: Date())
        return SendRequest(jobID: job, platform: .apns, recipient: .device(device),
                           notification: .apns(APNsNotification(payload: Array(#"{"aps":{"alert":"From bob: hi"}}"#.utf8))))
    }

    /// Two providers (two dispatchers on one spool) append to one outbox file at once: every
    /// line lands whole, none is lost or spliced into another.
    @Test func twoWritersAppendWholeLines() throws {
        let dir = TempDir("sandbox")
        let a = SandboxProvider(outbox: dir.url), b = SandboxProvider(outbox: dir.url)
        let group = DispatchGroup()
        for (provider, job) in [(a, "first"), (b, "second")] {
            DispatchQueue.global().async(group: group) {
                for i in 0..<2000 {
                    let done = ResultBox<ProviderResult>()
                    provider.send(Self.request(i, job: job)) { done.set($0) }
                    #expect(done.wait().disposition == .delivered)
                }
            }
        }
        group.wait()
        a.shutdown()
        b.shutdown()
        let text = try String(contentsOf: dir.url.appendingPathComponent("apns.jsonl"), encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 4000)
        var seen: [String: Int] = [:]
        for line in lines {
            let value = try JSONParser.parse(Array(line.utf8))
            guard case .string(let job)? = value["job"], case .string(let device)? = value["device"] else {
                Issue.record("not a whole line: \(line.prefix(80))")
                continue
            }
            seen[job + "/" + device, default: 0] += 1
            #expect(value["payload"]?["aps"]?["alert"] == .string("From bob: hi"))
        }
        #expect(seen.count == 4000 && seen.values.allSatisfy { $0 == 1 })
    }

    /// A batch (a producer's `Handout`) lands with one write and is answered in order on return:
    /// delivered, but for a malformed token, refused in its place with no line; a single send is
    /// written and answered at once.
    @Test func aBatchIsWrittenTogetherAndAnsweredInOrder() throws {
        let dir = TempDir("sandbox")
        let provider = SandboxProvider(outbox: dir.url)
        defer { provider.shutdown() }
        var batch = (0..<100).map { Self.request($0, job: "held") }
        let bad = Device(id: "bad", platform: .apns, handle: "not-hex", tags: [], updatedAt: Date())
        batch[50].recipient = .device(bad)
        let answers = provider.send(batch: batch)
        #expect(answers.count == 100)
        #expect(answers.enumerated().allSatisfy { i, r in i == 50 ? r.disposition == .deviceGone(since: nil) : r.disposition == .delivered })
        let lines = dir.read("apns.jsonl")?.split(separator: "\n") ?? []
        #expect(lines.count == 99 && !lines.contains { $0.contains("\"bad\"") })
        let done = ResultBox<ProviderResult>()
        provider.send(Self.request(100, job: "direct")) { done.set($0) }
        #expect(done.wait().disposition == .delivered)
        #expect(dir.read("apns.jsonl")?.split(separator: "\n").count == 100)
    }
}
