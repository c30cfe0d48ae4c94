import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// `status` takes a responding dispatcher's count of `incoming/` (`IncomingTally`) instead of
/// listing a folder that may hold a million files, and counts by itself when no dispatcher
/// responds. Real binary; what `status` opens is read off its syscalls.
@Suite(.serialized)
struct IncomingTallyTests {
    static func later(_ i: Int) -> String {
        #"{"id":"later-\#(i)","to_tag":"all","pns":"fcm","message":"m","not_before":"2099-01-01T00:00:00Z"}"#
    }

    static func incoming(_ s: SandboxSpool) throws -> [String: Any] {
        let doc = try ControlPathTests.statusJSON(s).doc
        return (doc["folders"] as? [String: Any])?["incoming"] as? [String: Any] ?? [:]
    }

    /// The directories `status` opened (strace), as `openat` lines naming `folder`.
    static func opensOf(_ folder: String, by args: [String], in dir: TempDir) throws -> [String] {
        let trace = dir.path("status.trace")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        p.arguments = ["-f", "-e", "trace=openat,open", "-o", trace, Paths.binary.path] + args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        let lines = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        return lines.split(separator: "\n").map(String.init).filter { $0.contains("/\(folder)\"") && $0.contains("O_DIRECTORY") }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")))
    func statusTakesTheRespondingDispatchersCountAndCountsItselfOtherwise() throws {
        let s = try SandboxSpool(devices: 1)
        for i in 0..<3 { s.dir.write("spool/incoming/later-\(i).json", Self.later(i)) }
        let run = try startPushspool(["run"] + s.common)
        defer { kill(run.processIdentifier, SIGCONT); if run.isRunning { run.terminate() }; run.waitUntilExit() }

        // The dispatcher lists incoming/ (three jobs waiting for 2099) and says so in .state/.
        eventually("status to take the dispatcher's count", timeout: 30) { (try? Self.incoming(s))?["listed_age_s"] is Int }
        var folder = try Self.incoming(s)
        #expect(folder["count"] as? Int == 3 && folder["oldest_age_s"] is Int, "\(folder)")
        #expect(try Self.opensOf("incoming", by: ["status", "--json"] + s.common, in: s.dir).isEmpty,
                "status listed incoming/ although a responding dispatcher had just listed it")

        // A fourth job: the dispatcher notices it (an event) and lists the folder again.
        s.dir.write("spool/incoming/later-3.json", Self.later(3))
        eventually("the dispatcher's count to change", timeout: 30) { (try? Self.incoming(s))?["count"] as? Int == 4 }

        // A dispatcher that does not respond lists nothing: status counts by itself, exactly.
        kill(run.processIdentifier, SIGSTOP)
        s.dir.write("spool/incoming/later-4.json", Self.later(4))
        eventually("status to count by itself instead of a stopped dispatcher's count", timeout: 30) {
            guard let f = try? Self.incoming(s) else { return false }
            return f["listed_age_s"] == nil && f["count"] as? Int == 5
        }
        #expect(try !Self.opensOf("incoming", by: ["status", "--json"] + s.common, in: s.dir).isEmpty, "status did not count by itself")
        folder = try Self.incoming(s)
        #expect(folder["count"] as? Int == 5 && folder["not_jobs"] as? Int == 0, "\(folder)")
    }
}
