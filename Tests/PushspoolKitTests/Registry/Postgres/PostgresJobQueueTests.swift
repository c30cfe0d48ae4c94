import Foundation
import Synchronization
import Testing
import PushspoolCore
import PushspoolTestSupport
@testable import PushspoolKit

/// The shared queue's store against a real PostgreSQL: two stores on one database stand in for
/// two hosts (their `host` names differ), as the hosts' `ChunkWorker`s use them.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct PostgresJobQueueTests {
    /// A registry with `devices` devices tagged `all`, and two hosts' stores.
    static func setUp(devices: Int = 25) throws -> (registry: PostgresRegistry, a: PostgresJobQueue, b: PostgresJobQueue) {
        let uri = try RegistryFixture.postgresDatabase()
        let registry = try PostgresRegistry(uri: uri)
        for i in 0..<devices { _ = try registry.upsert(Registration(id: "d\(i)", platform: .fcm, handle: "t\(i)", tags: ["all"])) }
        return (registry, PostgresJobQueue(uri: uri, host: "a/1"), PostgresJobQueue(uri: uri, host: "b/2"))
    }

    static let body = #"{"id":"j","to_tag":"all","pns":["fcm"],"message":"m"}"#

    /// `setUp`, job `j` (to every device) published by host a and cut into chunks of 10.
    static func published(devices: Int) throws -> (registry: PostgresRegistry, a: PostgresJobQueue, b: PostgresJobQueue) {
        let (registry, a, b) = try setUp(devices: devices)
        try a.publish(id: "j", body: body, jobLine: "{}", targets: devices, requests: false, devices: true)
        _ = try cutAll(a, registry, size: 10)
        return (registry, a, b)
    }

    /// Cuts the whole audience the way a worker does; returns the chunks' ranges.
    static func cutAll(_ q: PostgresJobQueue, _ registry: PostgresRegistry, size: Int) throws -> Int {
        var cut = try #require(try q.claimCut(lease: 30))
        var n = 0
        while true {
            let end = try registry.chunkEnd(platforms: [.fcm], apps: nil, tokenKind: nil, matching: .tag("all"), after: cut.after, size: size)
            #expect(try q.addChunk(&cut, last: end, lease: 30))
            guard end != nil else { return n }
            n += 1
        }
    }

    @Test func anAudienceIsCutIntoKeysetChunksOnce() throws {
        let (registry, a, b) = try Self.setUp(devices: 25)
        try a.publish(id: "j", body: Self.body, jobLine: #"{"type":"job"}"#, targets: 25, requests: false, devices: true)
        try a.publish(id: "j", body: Self.body, jobLine: "changed", targets: 99, requests: false, devices: true)   // a resume: nothing changes
        #expect(try a.job("j")?.jobLine == #"{"type":"job"}"#)
        // One host cuts; the other finds nothing to cut while it holds the cut's lease.
        #expect(try Self.cutAll(a, registry, size: 10) == 3)
        #expect(try b.claimCut(lease: 30) == nil)
        let chunks = try b.claim(count: 10, lease: 30)
        #expect(chunks.map(\.number) == [1, 2, 3])
        // Keyset ranges: consecutive, each (after, last], covering every device once.
        #expect(chunks[0].after == 0)
        for (x, y) in zip(chunks, chunks.dropFirst()) { #expect(x.last == y.after) }
        #expect(try a.progress("j")?.cutDone == true)
    }

    @Test func twoHostsNeverClaimOneChunkAndATakeoverLocksTheOldHolderOut() throws {
        let (_, a, b) = try Self.published(devices: 40)
        let mine = try a.claim(count: 2, lease: 1)
        let theirs = try b.claim(count: 10, lease: 30)
        #expect(mine.count == 2 && theirs.count == 2)
        #expect(Set(mine.map(\.number)).isDisjoint(with: theirs.map(\.number)))
        // a records while it holds its lease; once the lease ran out, b takes the chunk and a
        // can neither record nor complete it.
        #expect(try a.record(mine[0], lines: "{\"type\":\"delivery\"}\n"))
        #expect(try b.claim(count: 10, lease: 30).isEmpty)
        Thread.sleep(forTimeInterval: 1.2)
        let taken = try b.claim(count: 10, lease: 30)
        #expect(Set(taken.map(\.number)) == Set(mine.map(\.number)))
        #expect(taken.allSatisfy { $0.taken == 2 })
        #expect(try !a.record(mine[0], lines: "{\"type\":\"delivery\"}\n"))
        #expect(try !a.complete(mine[0]))
        #expect(try a.renew([PostgresJobQueue.key("j", mine[0].number)], lease: 30, sent: 0, rate: 0).isEmpty)
        // What a recorded before stays with the chunk: the new holder resends only the rest.
        #expect(try b.lines(job: "j", chunk: mine[0].number) == ["{\"type\":\"delivery\"}\n"])
        #expect(try b.complete(taken[0]))
    }

    /// A chunk whose row a dead session still locks is skipped by a claim and told apart: the
    /// claiming host looks again later (nothing announces the lock's end), and takes it then.
    @Test func aChunkLockedByAnotherSessionIsSkippedAndToldApart() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let registry = try PostgresRegistry(uri: uri)
        for i in 0..<20 { _ = try registry.upsert(Registration(id: "d\(i)", platform: .fcm, handle: "t\(i)", tags: ["all"])) }
        let a = PostgresJobQueue(uri: uri, host: "a/1"), b = PostgresJobQueue(uri: uri, host: "b/2")
        try a.publish(id: "j", body: Self.body, jobLine: "{}", targets: 20, requests: false, devices: true)
        #expect(try Self.cutAll(a, registry, size: 10) == 2)
        let other = try PostgresConnection(uri: uri)
        try other.execute("BEGIN")
        _ = try other.query("SELECT chunk FROM queue_chunks WHERE job = 'j' AND chunk = 1 FOR UPDATE")
        let first = try b.claim(count: 10, lease: 30)
        #expect(first.map(\.number) == [2])
        #expect(try b.claimableButLocked())
        try other.execute("ROLLBACK")
        #expect(try b.claim(count: 10, lease: 30).map(\.number) == [1])
        #expect(try !b.claimableButLocked())
    }

    /// A chunk's lines are read a page of rows at a time, in the order they were written, the
    /// origin's own rows left out across pages.
    @Test func aChunksLinesAreStreamedAPageAtATime() throws {
        let (_, a, _) = try Self.published(devices: 20)
        let chunk = try #require(try a.claim(count: 1, lease: 30).first)
        var rows: [Int64] = []
        for i in 0..<7 { rows.append(try #require(try a.record([(chunk, Array("{\"n\":\(i)}\n".utf8))])[chunk])) }
        var read: [String] = []
        try a.forEachBatch(job: "j", chunk: chunk.number, excluding: [rows[1], rows[4]], pageSize: 2) { read.append($0) }
        #expect(read == [0, 2, 3, 5, 6].map { "{\"n\":\($0)}\n" })
        #expect(try a.lines(job: "j", chunk: chunk.number).count == 7)
    }

    /// Several chunks' batches go in one statement; a batch of a chunk the host no longer holds
    /// is dropped, and the rows the others became are what the origin leaves out when it reads
    /// back (it has them in its log: sent on its own host).
    @Test func batchesOfSeveralChunksAreRecordedTogetherAndReadBackButForTheOriginsOwn() throws {
        let (_, a, b) = try Self.published(devices: 30)
        let mine = try a.claim(count: 2, lease: 30)
        let theirs = try #require(try b.claim(count: 1, lease: 30).first)
        let rows = try a.record([(mine[0], Array("{\"n\":1}\n".utf8)), (mine[1], Array("{\"n\":2}\n".utf8)), (theirs, Array("{\"n\":3}\n".utf8))])
        #expect(Set(rows.keys) == Set(mine))
        let again = try a.record([(mine[0], Array("{\"n\":4}\n".utf8))])
        let first = try #require(rows[mine[0]]), second = try #require(again[mine[0]])
        #expect(second > first)
        #expect(try b.lines(job: "j", chunk: theirs.number).isEmpty)
        #expect(try a.lines(job: "j", chunk: mine[0].number) == ["{\"n\":1}\n", "{\"n\":4}\n"])
        #expect(try a.lines(job: "j", chunk: mine[0].number, excluding: [first]) == ["{\"n\":4}\n"])
        #expect(try a.lines(job: "j", chunk: mine[0].number, excluding: [first, second]).isEmpty)
        // The lines go as bytes: text beyond ASCII comes back as it was.
        let accented = "{\"message\":\"From bob: héllo 🎉\"}\n"
        #expect(try a.record(mine[1], lines: accented))
        #expect(try a.lines(job: "j", chunk: mine[1].number).last == accented)
    }

    /// `queue.keep_days`: a job that ended longer ago than kept goes with its chunks and every
    /// outcome line, a few chunks per statement; a job that ended since and one still running
    /// keep theirs, and a second pass finds nothing.
    @Test func jobsEndedLongerAgoThanKeptGoWithTheirChunksAndLines() throws {
        let (registry, a, b) = try Self.published(devices: 45)   // j: chunks 1…5
        try a.publish(id: "k", body: Self.body, jobLine: "{}", targets: 45, requests: true, devices: true)
        _ = try Self.cutAll(a, registry, size: 10)
        for chunk in try b.claim(count: 20, lease: 30) {
            #expect(try b.record(chunk, lines: "{\"chunk\":\(chunk.number)}\n"))
            #expect(try b.record(chunk, lines: "{\"again\":\(chunk.number)}\n"))
            #expect(try b.complete(chunk))
        }
        try a.end("j", summaryLine: "{}")
        try a.end("k", summaryLine: "{}")
        try a.publish(id: "r", body: Self.body, jobLine: "{}", targets: 45, requests: false, devices: true)
        _ = try Self.cutAll(a, registry, size: 10)
        try a.run { c in try c.query("UPDATE queue_jobs SET ended_at = ended_at - interval '31 days' WHERE id = 'j'") }
        let rows = { (job: String) throws -> [Int64] in
            try a.run { c in
                try ["queue_jobs WHERE id", "queue_chunks WHERE job", "queue_outcomes WHERE job"].map {
                    try c.query("SELECT count(*) FROM \($0) = $1", [job]).int64(0, 0)
                }
            }
        }
        #expect(try rows("j") == [1, 5, 10])
        #expect(try rows("k") == [1, 6, 12])

        #expect(try a.purge(endedBefore: 30 * 86_400, chunksPerStatement: 2) == 1)
        #expect(try rows("j") == [0, 0, 0])
        #expect(try !b.results("j") { _ in })
        #expect(try rows("k") == [1, 6, 12])
        #expect(try rows("r") == [1, 5, 0])
        #expect(try b.purge(endedBefore: 30 * 86_400) == 0)
        // Kept for a second instead: k, ended, goes too; r, running, stays.
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try b.purge(endedBefore: 1) == 1)
        #expect(try rows("k") == [0, 0, 0])
        #expect(try rows("r") == [1, 5, 0])
    }

    /// `queue.durable_outcomes` false: an outcome batch's transaction commits without waiting for
    /// the flush; when true, and for every other statement on the pool's connections (the same
    /// connections: one pool per process), it waits. A trigger notes the setting the batch's
    /// own transaction runs (and so commits) under.
    @Test(arguments: [false, true])
    func outcomeBatchesWaitForTheFlushOnlyWhenDurable(_ durable: Bool) throws {
        let uri = try RegistryFixture.postgresDatabase()
        let registry = try PostgresRegistry(uri: uri)
        for i in 0..<5 { _ = try registry.upsert(Registration(id: "d\(i)", platform: .fcm, handle: "t\(i)", tags: ["all"])) }
        // The test cluster itself runs without synchronous commits: this database's sessions do.
        let setup = try PostgresConnection(uri: uri)
        let name = try #require(try setup.query("SELECT current_database()").text(0, 0))
        try setup.execute("ALTER DATABASE \"\(name)\" SET synchronous_commit = on")
        try setup.execute("""
            CREATE TABLE seen(setting text);
            CREATE FUNCTION note_setting() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN INSERT INTO seen VALUES (current_setting('synchronous_commit')); RETURN NEW; END $$;
            CREATE TRIGGER note BEFORE INSERT ON queue_outcomes FOR EACH ROW EXECUTE FUNCTION note_setting();
            """)
        let q = PostgresJobQueue(uri: uri, host: "a/1", maxConnections: 1, durableOutcomes: durable)
        try q.publish(id: "j", body: Self.body, jobLine: "{}", targets: 5, requests: false, devices: true)
        _ = try Self.cutAll(q, registry, size: 10)
        let chunk = try #require(try q.claim(count: 1, lease: 30).first)
        #expect(try q.record(chunk, lines: "{}\n"))
        #expect(try setup.query("SELECT setting FROM seen").text(0, 0) == (durable ? "on" : "off"))
        // The pool's one connection is left as it was.
        #expect(try q.run { try $0.query("SHOW synchronous_commit").text(0, 0) } == "on")
        setup.close()
    }

    @Test func theOriginSeesChunksCompleteAndTheJobEnd() throws {
        let (registry, a, b) = try Self.setUp(devices: 20)
        try a.publish(id: "j", body: Self.body, jobLine: "{\"type\":\"job\"}", targets: 20, requests: true, devices: true)
        _ = try Self.cutAll(a, registry, size: 10)
        let chunks = try b.claim(count: 10, lease: 30)
        #expect(chunks.map(\.number) == [0, 1, 2])
        #expect(chunks[0].requests)
        for c in chunks {
            #expect(try b.record(c, lines: "{\"chunk\":\(c.number)}\n"))
            #expect(try b.complete(c))
        }
        var p = try #require(try a.progress("j"))
        #expect(p.unapplied == [0, 1, 2] && p.open == 0 && !p.finished)
        for c in p.unapplied { try a.markApplied(job: "j", chunk: c) }
        p = try #require(try a.progress("j"))
        #expect(p.finished)
        try a.end("j", summaryLine: "{\"type\":\"summary\"}")
        var text = ""
        #expect(try b.results("j") { text += $0 })
        #expect(text == "{\"type\":\"job\"}\n{\"chunk\":0}\n{\"chunk\":1}\n{\"chunk\":2}\n{\"type\":\"summary\"}\n")
        #expect(try !b.results("nope") { _ in })
    }

    @Test func aCancelOrPauseStopsClaimsOnEveryHostAndACancelStays() throws {
        let (_, a, b) = try Self.published(devices: 20)
        #expect(try b.steer("j", .pause))
        #expect(try b.controls() == ["j": .pause])
        #expect(try a.claim(count: 10, lease: 30).isEmpty)
        #expect(try a.steer("j", nil))
        #expect(try a.claim(count: 1, lease: 30).count == 1)
        #expect(try b.steer("j", .cancel))
        #expect(try !b.steer("j", nil))            // a resume does not undo a cancel
        #expect(try !b.steer("j", .pause))
        #expect(try a.progress("j")?.control == .cancel)
        #expect(try !a.steer("unknown", .cancel))
        try a.end("j", summaryLine: "{}")
        #expect(try !b.steer("j", .pause))         // ended: nothing to steer
        #expect(try b.controls().isEmpty)
    }

    @Test func listenersHearChunksAsTheyComplete() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let registry = try PostgresRegistry(uri: uri)
        for i in 0..<10 { _ = try registry.upsert(Registration(id: "d\(i)", platform: .fcm, handle: "t\(i)", tags: ["all"])) }
        let a = PostgresJobQueue(uri: uri, host: "a/1"), b = PostgresJobQueue(uri: uri, host: "b/2")
        let heard = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let listener = QueueListener(uri: uri)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            listener.listen(timeout: 0.1, stop: { stop.load(ordering: .acquiring) }) { p in if let p { heard.withLock { $0.append(p) } } }
            done.signal()
        }
        Thread.sleep(forTimeInterval: 0.3)       // listening
        try a.publish(id: "j", body: Self.body, jobLine: "{}", targets: 10, requests: false, devices: true)
        _ = try Self.cutAll(a, registry, size: 100)
        let c = try #require(try b.claim(count: 1, lease: 30).first)
        #expect(try b.complete(c))
        #expect(pollUntil(timeout: 5) { heard.withLock { $0.contains("done j") } })
        stop.store(true, ordering: .releasing)
        done.wait()
        #expect(heard.withLock { $0.first } == "ready")
    }

    /// The origin's next step from where the job stands (no database: the decision alone).
    @Test(arguments: [
        // unapplied, open, leased, cut, control → next
        ([Int](), 0, 0, true, nil, PostgresJobQueue.Progress.Next.done),
        ([3], 0, 0, true, nil, .wait),                 // a chunk not yet in the log
        ([], 0, 0, false, nil, .wait),                 // still being cut
        ([], 2, 1, true, nil, .wait),
        ([], 2, 1, true, .cancel, .wait),              // a host still records its requests in flight
        ([], 2, 0, true, .cancel, .cancelled),
        ([], 2, 0, true, .pause, .paused),
        ([], 0, 0, true, .cancel, .done),              // every chunk came in before the cancel was seen
    ] as [([Int], Int, Int, Bool, ControlRequest?, PostgresJobQueue.Progress.Next)])
    func theOriginsNextStep(_ unapplied: [Int], _ open: Int, _ leased: Int, _ cut: Bool, _ control: ControlRequest?,
                            _ next: PostgresJobQueue.Progress.Next) {
        let p = PostgresJobQueue.Progress(unapplied: unapplied, open: open, leased: leased, cutDone: cut, control: control)
        #expect(p.next == next)
    }

    /// Once the origin wrote the last chunk's lines, the job is done then, not at the next
    /// notification (none comes: the origin waited for its fallback look, 5 s, at every job's end).
    @Test func theLastChunkWrittenEndsTheJobAtOnce() {
        let p = PostgresJobQueue.Progress(unapplied: [7], open: 0, leased: 0, cutDone: true, control: nil)
        #expect(p.next == .wait)
        #expect(p.written.next == .done)
        let cutting = PostgresJobQueue.Progress(unapplied: [7], open: 0, leased: 0, cutDone: false, control: nil)
        #expect(cutting.written.next == .wait)
    }

    /// The origin sleeps until a notification, but for a steered job whose chunks are still
    /// held: a holder that dies tells no one, and no host takes a steered job's chunk over, so
    /// the origin looks again just after the earliest lease ends (it used to look every 5 s).
    @Test(arguments: [
        // leased, control, lease ends in → look in
        (1, nil, 20.0, nil),                           // taken over on a lapse, and that is announced
        (1, .cancel, 20.0, 20.0 + ChunkSlots.afterLapse),
        (2, .pause, 3.5, 3.5 + ChunkSlots.afterLapse),
        (0, .cancel, nil, nil),                        // ends now: nothing to look for
        (0, nil, nil, nil),
    ] as [(Int, ControlRequest?, Double?, Double?)])
    func theOriginLooksAgainOnlyWhenNothingWouldTell(_ leased: Int, _ control: ControlRequest?, _ ends: Double?, _ look: Double?) {
        let p = PostgresJobQueue.Progress(unapplied: [], open: 3, leased: leased, cutDone: true, control: control, leaseEnds: ends)
        #expect(p.look == look)
    }

    /// A provider paused, or told to be quiet, on one host is paused or quiet on the others, for
    /// what is left of it (seconds on the database's clock, not an instant on a host's).
    @Test func aProvidersPauseAndQuietReachTheOtherHosts() throws {
        let uri = try RegistryFixture.postgresDatabase()
        _ = try PostgresRegistry(uri: uri)     // the schema
        let a = ProviderState(provider: ScriptedProvider(name: "fcm"), name: "fcm", sharing: SharedProviderPauses(uri: uri))
        let b = ProviderState(provider: ScriptedProvider(name: "fcm"), name: "fcm", sharing: SharedProviderPauses(uri: uri))
        let other = ProviderState(provider: ScriptedProvider(name: "apns"), name: "apns", sharing: SharedProviderPauses(uri: uri))
        a.quiet(until: Date().addingTimeInterval(30))
        a.pause("the service account's key was revoked")
        let sharing = SharedProviderPauses(uri: uri)
        #expect(pollUntil(timeout: 5) { ((try? sharing.current()) ?? []).count == 2 })
        for pause in try sharing.current() {
            for state in [b, other] where state.name == pause.provider { state.apply(pause) }
        }
        #expect(b.pausedReason == "the service account's key was revoked")
        #expect(b.quietUntil.timeIntervalSinceNow > 25 && b.quietUntil.timeIntervalSinceNow <= 30)
        #expect(other.pausedReason == nil && other.quietUntil == .distantPast)
    }
}
