import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A broadcast to every device killed with SIGKILL once its result log holds `fraction` of the
/// deliveries, then `run --once` again: how long the resumed run takes to send its first new
/// notification (from its start to the outbox growing: reading what the log already records and
/// getting past the registry's finished rows included), and the resumed run as a whole.
struct ResumeStep {
    static let fraction = 0.6

    /// Seconds from the resumed run's start to its first new outbox line.
    var firstSend: Double
    var resumed: Measured
    /// Devices the resumed job's summary counts as delivered.
    var delivered: Int
    /// Outbox lines beyond one per device: the requests in flight at the kill, sent again.
    var sentTwice: Int

    /// `lineBytes`: a delivery line's mean size (from an earlier broadcast's log), to tell when
    /// the log holds `fraction` of the deliveries without reading it.
    static func run(binary: String, common: [String], spool: URL, devices: Int, lineBytes: Double) throws -> ResumeStep {
        let job = "resumed"
        let submitted = try measure(binary, ["submit"] + common + ["--broadcast", "--pns", "apns,fcm,wns", "--message", "hello", "--from", "bench", "--id", job])
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let log = spool.appendingPathComponent("results/\(job).jsonl")
        let first = try Child(binary, ["run", "--once"] + common)
        let killAt = Int(Double(devices) * fraction * lineBytes)
        while size(log) < killAt {
            if let early = first.exited() { throw BenchError(description: "the broadcast ended (\(early.status)) before the kill") }
            usleep(2_000)
        }
        kill(first.pid, SIGKILL)
        _ = first.wait()

        let outbox = ["apns", "fcm", "wns"].map { spool.appendingPathComponent("outbox/\($0).jsonl") }
        let sentBefore = outbox.map(size).reduce(0, +)
        let second = try Child(binary, ["run", "--once"] + common)
        var firstSend = Double.nan
        while second.exited() == nil {
            if outbox.map(size).reduce(0, +) > sentBefore {
                firstSend = second.elapsed
                break
            }
            usleep(1_000)
        }
        let resumed = second.wait()
        guard resumed.status == 0 else { throw BenchError(description: "the resumed run failed (\(resumed.status))") }
        let summary = try lastLine(log)
        let delivered = (try? JSONSerialization.jsonObject(with: summary) as? [String: Any])?["delivered"] as? Int ?? -1
        let lines = try outbox.map(newlines).reduce(0, +)
        return ResumeStep(firstSend: firstSend, resumed: resumed, delivered: delivered, sentTwice: lines - devices)
    }

    static func size(_ url: URL) -> Int {
        var st = stat()
        return stat(url.path, &st) == 0 ? Int(st.st_size) : 0
    }

    private static func lastLine(_ url: URL) throws -> Data {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let end = try handle.seekToEnd()
        try handle.seek(toOffset: end > 4096 ? end - 4096 : 0)
        let tail = try handle.readToEnd() ?? Data()
        return Data(tail.split(separator: 0x0A).last ?? [])
    }

    private static func newlines(_ url: URL) throws -> Int {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var n = 0
        while let chunk = try handle.read(upToCount: 1 << 22), !chunk.isEmpty {
            n += chunk.withUnsafeBytes { $0.reduce(0) { $1 == 0x0A ? $0 + 1 : $0 } }
        }
        return n
    }
}

/// A child left running while the bench watches its files: its output discarded, its wall time,
/// CPU and peak RSS taken when it is reaped (`wait4`).
final class Child {
    let pid: pid_t
    private let start = DispatchTime.now()
    private var reaped: Measured?

    init(_ executable: String, _ args: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        let argv = ([executable] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError(description: "cannot start \(executable): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }

    /// The child's measures once it has ended, without waiting; nil while it runs.
    func exited() -> Measured? { reaped ?? reap(WNOHANG) }

    /// Waits for the child to end.
    func wait() -> Measured {
        while true {
            if let m = reaped ?? reap(0) { return m }
        }
    }

    private func reap(_ options: Int32) -> Measured? {
        var status: Int32 = 0
        var usage = rusage()
        let r = wait4(pid, &status, options, &usage)
        guard r == pid else { return nil }
        func secs(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        #if os(Linux)
        let rss = Int(usage.ru_maxrss) * 1024
        #else
        let rss = Int(usage.ru_maxrss)
        #endif
        reaped = Measured(status: exit, seconds: elapsed, cpuSeconds: secs(usage.ru_utime) + secs(usage.ru_stime),
                          peakRSS: rss, stdout: "", stderr: "")
        return reaped
    }
}
