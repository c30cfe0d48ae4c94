import Foundation
import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// A flood: N one-device job files dropped into `incoming/` at once, then `run` (the release
/// binary, sandbox provider) drains them while `status` is asked every 250 ms. Figures: jobs/s,
/// the dispatcher's peak RSS (wait4), the worst `status` answer. With `--seconds S` the dispatcher
/// is stopped (SIGTERM) after S seconds instead of draining everything: the memory of a dispatcher
/// facing a million waiting files without a quarter of an hour's drain. With `--baseline BINARY`
/// the same flood is drained by that binary too (an earlier build): the peer of each figure.
/// Each poll also times `ls -f incoming | wc -l` on the same folder, the peer of `status`'s count,
/// and the worst `status` is also given once the dispatcher has published its first count of
/// `incoming/` (`.state/incoming.tally`): before that, `status` lists the folder itself.
struct FloodRound {
    struct Figures {
        var jobs: Int
        var seconds: Double
        var peakRSS: Int
        var worstStatus: Double
        /// The worst `status` once the dispatcher's count existed (-1: no call after it), and the
        /// worst `ls -f | wc -l`.
        var worstStatusCounted: Double
        var worstPeer: Double
        var statusCalls: Int
        /// Webhook events still in `webhooks/pending/` when `run` exited.
        var webhooksPending = 0
        var rate: Double { Double(jobs) / seconds }
    }

    /// `config`: a config file's text for the spool's path, used by every command (the webhooks
    /// flood); nil: none.
    static func run(binary: String, files: Int, stopAfter: Double?, config: ((String) -> String)? = nil) throws -> Figures {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-flood-\(getpid())-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Removing 300,000 files takes a while on a busy disk: in the background, after the figures.
        defer { _ = try? Process.run(URL(fileURLWithPath: "/bin/rm"), arguments: ["-rf", dir.path]) }
        let spool = dir.appendingPathComponent("spool").path
        var extra: [String] = []
        if let config {
            let file = dir.appendingPathComponent("pushspool.json")
            try config(spool).write(to: file, atomically: true, encoding: .utf8)
            extra = ["--config", file.path]
        }
        for args in [["init", "--spool", spool], ["register", "--platform", "fcm", "--handle", "fcm-token-1", "--tag", "all", "--spool", spool]] {
            let r = try measure(binary, args + extra)
            guard r.status == 0 else { throw BenchError(description: "\(args[0]) failed: \(r.stderr)") }
        }
        // Dropped straight into incoming/ (the dispatcher is not running yet): one job, one device each.
        let incoming = spool + "/incoming/"
        let body = Array(#"{"to_tag": "all", "pns": ["fcm"], "message": "flood"}"#.utf8)
        for i in 0..<files {
            let fd = open(incoming + "flood-\(i).json", O_WRONLY | O_CREAT | O_EXCL, 0o640)
            guard fd >= 0 else { throw BenchError(description: "cannot write job \(i): \(String(cString: strerror(errno)))") }
            _ = body.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }

        let args = (stopAfter == nil ? ["run", "--once", "--spool", spool] : ["run", "--spool", spool]) + extra
        var pid: pid_t = 0
        let argv = ([binary] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let start = Date()
        let rc = posix_spawn(&pid, binary, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError(description: "cannot start run: \(String(cString: strerror(rc)))") }

        // status, every 250 ms while the dispatcher works.
        var worst = 0.0, worstCounted = -1.0, worstPeer = 0.0, calls = 0
        let tally = spool + "/.state/incoming.tally"
        var status: Int32 = 0
        var usage = rusage()
        var stopped = false
        while true {
            let r = wait4(pid, &status, WNOHANG, &usage)
            if r == pid { break }
            if let stopAfter, !stopped, Date().timeIntervalSince(start) >= stopAfter {
                kill(pid, SIGTERM)
                stopped = true
            }
            let counted = access(tally, F_OK) == 0
            let s = try measure(binary, ["status", "--spool", spool])
            worst = max(worst, s.seconds)
            if counted { worstCounted = max(worstCounted, s.seconds) }
            let peer = try measure("/bin/sh", ["-c", "ls -f '\(incoming)' | wc -l"])
            worstPeer = max(worstPeer, peer.seconds)
            calls += 1
            usleep(250_000)
        }
        let seconds = Date().timeIntervalSince(start)
        let done = try FileManager.default.contentsOfDirectory(atPath: spool + "/done").count
        return Figures(jobs: done, seconds: seconds, peakRSS: Int(usage.ru_maxrss) * 1024, worstStatus: worst,
                       worstStatusCounted: worstCounted, worstPeer: worstPeer, statusCalls: calls,
                       webhooksPending: WebhookJournal.counts(spoolRoot: URL(fileURLWithPath: spool)).pending)
    }

    static func printRows(files: Int, runs: Int, stopAfter: Double?, baseline: String?) throws {
        var ours: [Figures] = [], theirs: [Figures] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("flood run \(i + 1)/\(runs) (\(files) files)…\n".utf8))
            ours.append(try run(binary: BenchPaths.binary.path, files: files, stopAfter: stopAfter))
            if let baseline { theirs.append(try run(binary: baseline, files: files, stopAfter: stopAfter)) }
        }
        let label = stopAfter.map { "\(files) job files waiting, run for \(Int($0)) s" } ?? "\(files) one-device job files dropped at once, run --once"
        func peer(_ f: (Figures) -> Double, _ show: (Double) -> String) -> String {
            theirs.isEmpty ? "—" : "baseline " + show(median(theirs.map(f)))
        }
        func ratio(_ f: (Figures) -> Double) -> String {
            theirs.isEmpty ? "" : String(format: "%.2f×", median(zip(ours, theirs).map { f($0) / f($1) }))
        }
        let r = median(ours.map(\.rate)), rss = median(ours.map { Double($0.peakRSS) }), st = median(ours.map(\.worstStatus))
        row(["\(label): jobs drained", rate(r), peer(\.rate, rate), ratio(\.rate), "", ""])
        row(["same: peak RSS of run", mb(rss), peer({ Double($0.peakRSS) }, mb), ratio { Double($0.peakRSS) }, "≤ 64 MB", rss <= 64 * 1_048_576 ? "yes" : "no"])
        row(["same: worst status answer (\(ours.map(\.statusCalls).min() ?? 0)+ calls)", String(format: "%.3f s", st),
             peer(\.worstStatus) { String(format: "%.3f s", $0) }, ratio(\.worstStatus), "≤ 0.5 s", st <= 0.5 ? "yes" : "no"])
        let counted = median(ours.map(\.worstStatusCounted)), ls = median(ours.map(\.worstPeer))
        if counted < 0 {
            row(["same: worst status once the dispatcher had counted incoming/", "no call after its first count", String(format: "ls -f | wc -l %.3f s", ls), "", "", ""])
        } else {
            row(["same: worst status once the dispatcher had counted incoming/", String(format: "%.3f s", counted),
                 String(format: "ls -f | wc -l %.3f s", ls), String(format: "%.2f×", counted / ls), "≤ 0.5 s", counted <= 0.5 ? "yes" : "no"])
        }
    }
}
