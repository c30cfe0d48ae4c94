import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore
#if canImport(Glibc)
import Glibc
#endif

@Suite struct SpoolTests {
    /// A spool at `s/` in `dir`, with `files` (path below the spool → text) written into it.
    func newSpool(in dir: TempDir, holding files: [String: String] = [:]) throws -> Spool {
        let spool = try Spool(root: dir.url.appendingPathComponent("s"))
        for (name, text) in files { dir.write("s/\(name)", text) }
        return spool
    }

    /// The texts of `names` below the spool in `dir`, nil where a file is missing.
    func texts(in dir: TempDir, _ names: String...) -> [String?] { names.map { dir.read("s/\($0)") } }

    @Test("creates every folder without world access")
    func creates() throws {
        let dir = TempDir()
        let spool = try newSpool(in: dir)
        for folder in Spool.Folder.allCases {
            var st = stat()
            #expect(stat(spool.url(folder).path, &st) == 0)
            #expect(st.st_mode & 0o007 == 0, "\(folder) has world access")
        }
    }

    @Test("refuses a spool anyone may write to, in any of its folders", arguments: ["incoming", "results", ".state", "done", "."])
    func refusesWorldWritable(_ folder: String) throws {
        let dir = TempDir()
        _ = try Spool(root: dir.url.appendingPathComponent("s"))
        chmod(dir.path("s/\(folder)"), 0o777)
        #expect(throws: SpoolError.self) { try Spool(root: dir.url.appendingPathComponent("s")) }
    }

    @Test("re-tightens the credential cache folder")
    func stateIsPrivate() throws {
        let dir = TempDir()
        _ = try Spool(root: dir.url.appendingPathComponent("s"))
        chmod(dir.path("s/.state"), 0o755)
        _ = try Spool(root: dir.url.appendingPathComponent("s"))
        var st = stat()
        stat(dir.path("s/.state"), &st)
        #expect(st.st_mode & 0o777 == 0o700)
    }

    @Test("only *.json names not starting with a dot are jobs")
    func jobNames() throws {
        let dir = TempDir()
        let names = ["a.json", ".hidden.json", "notes.txt", "b.json.tmp", ".json", "c.json"]
        let spool = try newSpool(in: dir, holding: Dictionary(uniqueKeysWithValues: names.map { ("incoming/\($0)", "{}") }))
        #expect(spool.jobs(in: .incoming).sorted() == ["a.json", "c.json"])
    }

    @Test("submit is atomic: nothing is left in tmp/ and an existing job is never replaced")
    func submit() throws {
        let dir = TempDir()
        let spool = try newSpool(in: dir)
        try spool.submit(Array("{\"a\":1}".utf8), name: "x.json")
        #expect(dir.read("s/incoming/x.json") == "{\"a\":1}")
        #expect(throws: SpoolError.self) { try spool.submit(Array("{}".utf8), name: "x.json") }
        #expect(dir.read("s/incoming/x.json") == "{\"a\":1}")
        #expect(dir.list("s/tmp").isEmpty)
    }

    @Test("two dispatchers racing to claim: every job is claimed exactly once")
    func claimRace() throws {
        let dir = TempDir()
        let a = try Spool(root: dir.url.appendingPathComponent("s"))
        let b = try Spool(root: dir.url.appendingPathComponent("s"))
        for i in 0..<300 { try a.submit(Array("{}".utf8), name: "job\(i).json") }
        let names = a.jobs(in: .incoming)
        nonisolated(unsafe) var claimed: [[String]] = [[], []]
        DispatchQueue.concurrentPerform(iterations: 2) { who in
            let spool = who == 0 ? a : b
            var mine: [String] = []
            for name in names where spool.claim(name) { mine.append(name) }
            claimed[who] = mine
        }
        #expect(claimed[0].count + claimed[1].count == 300)
        #expect(Set(claimed[0]).isDisjoint(with: claimed[1]))
        #expect(a.jobs(in: .active).count == 300)
        #expect(a.jobs(in: .incoming).isEmpty)
    }

    @Test("a claim never overwrites an active job of the same name")
    func claimNoReplace() throws {
        let dir = TempDir()
        let spool = try newSpool(in: dir, holding: ["active/x.json": "running", "incoming/x.json": "new"])
        #expect(!spool.claim("x.json"))
        #expect(texts(in: dir, "active/x.json", "incoming/x.json") == ["running", "new"])
    }

    @Test("completing onto an existing name keeps both files")
    func completeCollision() throws {
        let dir = TempDir()
        let spool = try newSpool(in: dir, holding: ["done/x.json": "old", "active/x.json": "new"])
        #expect(spool.complete("x.json") == "x.1.json")
        #expect(texts(in: dir, "done/x.json", "done/x.1.json") == ["old", "new"])
    }

    /// The poll fallback (used where inotify cannot be set up) is an hour here: only a native
    /// event can report the job within the wait.
    @Test("the watcher reports a job renamed into incoming/")
    func watcher() throws {
        let dir = TempDir()
        let spool = try newSpool(in: dir)
        let watcher = SpoolWatcher(directory: spool.url(.incoming), pollInterval: 3600)
        let seen = DispatchSemaphore(value: 0)
        watcher.start { seen.signal() }
        defer { watcher.stop() }
        try spool.submit(Array("{}".utf8), name: "w.json")
        #expect(seen.wait(timeout: .now() + 10) == .success)
    }
}
