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

    /// On a send job's producer thread a request waits, line and answer, for `flush`: then all
    /// of them land with one write and are answered delivered; off that thread a line is written
    /// and answered at once.
    @Test func heldOnTheProducerThreadUntilFlushed() throws {
        let dir = TempDir("sandbox")
        let provider = SandboxProvider(outbox: dir.url)
        defer { provider.shutdown() }
        let answers = Mutex<[ProviderResult]>([])
        ProducerThread.run {
            for i in 0..<100 { provider.send(Self.request(i, job: "held")) { r in answers.withLock { $0.append(r) } } }
        }
        #expect(answers.withLock { $0.isEmpty })
        #expect(dir.read("apns.jsonl") == nil)
        provider.flush()
        #expect(answers.withLock { $0.count == 100 && $0.allSatisfy { $0.disposition == .delivered } })
        #expect(dir.read("apns.jsonl")?.split(separator: "\n").count == 100)
        let done = ResultBox<ProviderResult>()
        provider.send(Self.request(100, job: "direct")) { done.set($0) }
        #expect(done.wait().disposition == .delivered)
        #expect(dir.read("apns.jsonl")?.split(separator: "\n").count == 101)
    }
}
