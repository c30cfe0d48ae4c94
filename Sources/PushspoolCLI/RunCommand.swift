import PushspoolKit
import Dispatch
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum RunCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        let runtime = try Runtime(args, requireSecrets: true, writing: Spool.Folder.allCases)
        let once = args.has("once")
        let (reports, scheduled, lostSpool) = try dispatch(runtime, once: once) { print($0) }
        if let lostSpool {
            // systemd (Restart=on-failure) starts a dispatcher on whatever is at the path now.
            FileHandle.standardError.write(Data("pushspool: run: \(lostSpool); stopped\n".utf8))
            return .ioError
        }
        // A long-running dispatcher stopped by a signal stopped cleanly, whatever it met and
        // recovered from on the way (those I/O errors are in the log and the metrics): systemd
        // must not mark a healthy stop as failed.
        guard once else { return .ok }
        // cron mails what a job prints: say when there was nothing to do, and what waits.
        if reports.count == 0 { print("nothing due in \(runtime.spool.url(.incoming).path)") }
        if let next = scheduled.first {
            let more = scheduled.count > 1 ? " (\(scheduled.count) jobs scheduled)" : ""
            print("next scheduled: \(next.name) at \(Timestamp.rfc3339(next.notBefore))\(more)")
        }
        // A job left in active/ by an I/O failure (full disk) is kept safe, but cron should hear of it.
        return reports.ioTrouble ? .ioError : .ok
    }

    /// Builds the engine for `runtime`, runs it (once or until SIGINT/SIGTERM), shuts providers
    /// down, and returns the job reports and the jobs still waiting for their `not_before`.
    @discardableResult
    static func dispatch(_ runtime: Runtime, once: Bool, print: @escaping @Sendable (JobReport) -> Void) throws(CLIError)
        -> (reports: ReportCollector.Tally, scheduled: [(name: String, notBefore: Date)], lostSpool: String?) {
        let log = Log.shared
        let collected = ReportCollector()
        let engine: Engine
        do {
            engine = try Engine(config: runtime.config, spool: runtime.spool,
                                hooks: Engine.Hooks(log: log, report: { collected.add($0); print($0) }, board: .shared,
                                                    clock: TestClock.fromEnvironment()))
        } catch {
            throw CLIError(error)
        }
        // A write to a pipe or socket whose reader is gone is an error to handle (EPIPE), never
        // the end of the process: set here, not left to a library's side effect. (The HTTP
        // client's own sockets write with MSG_NOSIGNAL.)
        signal(SIGPIPE, SIG_IGN)
        // SIGINT/SIGTERM: stop claiming, let running jobs checkpoint, exit cleanly.
        var signalSources: [any DispatchSourceSignal] = []
        // SIGHUP too (a closed terminal, a careless `kill -HUP`): a clean stop, never a crash.
        // A second signal, or requests still unanswered `stopGrace` seconds after the first,
        // end the process at once. That is safe: every outcome is written through before its slot
        // is freed, so the jobs left in active/ resume without resending what their logs record.
        let signals = Mutex(0)
        for (sig, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                let n = signals.withLock { n in n += 1; return n }
                if n > 1 { exitNow("a second signal: stopping now; unfinished jobs stay in active/ and resume where their result logs end") }
                // Said as `serve` says it: an operator sees the stop begin, and end below.
                log.info("\(name): stopping: no new job is taken; the requests in flight are answered (at most \(Int(stopGrace)) s)")
                engine.stop()
                DispatchQueue.global().asyncAfter(deadline: .now() + stopGrace) {
                    exitNow("requests still in flight \(Int(stopGrace)) s after the stop signal; stopping now: unfinished jobs stay in active/ and resume where their result logs end")
                }
            }
            source.resume()
            signalSources.append(source)
        }
        // A spool (or registry) deleted or moved away under a running dispatcher: it would go on
        // sending to a registry nobody can change while new jobs wait at the path. Looked at when
        // the paths change (inotify; every 2 s where it cannot watch); the dispatcher stops as on
        // SIGTERM, and `run` exits 74.
        let lost = Mutex<String?>(nil)
        let identity = SpoolIdentity(runtime)
        let guardWatch = identity.map { identity in
            PathChangeWatch(paths: [identity.spool, identity.registry]) {
                guard let change = identity.change() else { return }
                let first = lost.withLock { l -> Bool in
                    if l != nil { return false }
                    l = change
                    return true
                }
                guard first else { return }
                log.error(change)
                engine.stop()
            }
        }
        if once {
            engine.runOnce()
        } else {
            log.info("watching \(runtime.spool.url(.incoming).path)")
            engine.runForever()
        }
        guardWatch?.stop()
        engine.shutdown()
        signalSources.forEach { $0.cancel() }
        let lostSpool = lost.withLock { $0 }
        // A lost spool ends with its own line (`run` exits 74); `--once` with its summary.
        if !once && lostSpool == nil {
            let line = switch collected.tally.interrupted {
            case 0: "stopped"
            case 1: "stopped: 1 unfinished job stays in active/ and resumes where its result log ends"
            case let left: "stopped: \(left) unfinished jobs stay in active/ and resume where their result logs end"
            }
            log.info(line)
        }
        return (collected.tally, engine.dispatcher.scheduled, lostSpool)
    }
}

/// How long a stopping dispatcher waits for requests in flight (systemd's unit allows 60 s).
let stopGrace = 30.0

/// Ends the process at once, after one log line (exit 0: the stop was asked for, and nothing is lost).
func exitNow(_ why: String) -> Never {
    Log.shared.warning(why)
    Log.shared.flushRepeats()
    CLI.end(0)
}

/// What the spool folder and the registry file were when `run` started (device and inode).
struct SpoolIdentity: Sendable {
    let spool: String, registry: String
    let spoolID: (UInt64, UInt64), registryID: (UInt64, UInt64)

    init?(_ runtime: Runtime) {
        spool = runtime.spool.root.path
        // A PostgreSQL registry is no file: only the spool is watched.
        let value = runtime.config.registryPath
        registry = RegistryLocation.isPostgres(value) ? spool : runtime.config.resolve(value).path
        guard let s = Self.id(spool), let r = Self.id(registry) else { return nil }
        spoolID = s
        registryID = r
    }

    static func id(_ path: String) -> (UInt64, UInt64)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (UInt64(st.st_dev), UInt64(st.st_ino))
    }

    /// Why the spool or registry is no longer the one this dispatcher works on, or nil.
    func change() -> String? {
        if Self.id(spool).map({ $0 == spoolID }) != true { return "the spool \(spool) was deleted or replaced while running" }
        if Self.id(registry).map({ $0 == registryID }) != true { return "the registry \(registry) was deleted or replaced while running" }
        return nil
    }
}

/// What `run` needs to know of the jobs it ended, in constant memory (a long-running dispatcher
/// ends millions of jobs; each report is printed and logged as it comes).
final class ReportCollector: Sendable {
    struct Tally: Sendable {
        var count = 0
        /// A job was left in `active/` by an I/O failure (full disk), not by a stop.
        var ioTrouble = false
        /// Jobs left in `active/` unfinished, to resume (not a `local_time` job between waves).
        var interrupted = 0
    }
    private let state = Mutex(Tally())
    func add(_ r: JobReport) {
        state.withLock { t in
            t.count += 1
            // A `local_time` job between waves is on schedule, not in trouble.
            if case .interrupted(let why) = r.outcome {
                if case .nextWave = why { return }
                t.interrupted += 1
                if why != .stopping { t.ioTrouble = true }
            }
        }
    }
    var tally: Tally { state.withLock { $0 } }
}
