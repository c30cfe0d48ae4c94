import Dispatch
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `.state/dispatchers/<instance>`: one `DispatcherRecord` per running dispatcher (`run`, `run --once`),
/// its heartbeat rewritten every `interval` by a timer of its own, removed when it stops.
///
/// A job's lock says that its dispatcher's process exists, not that it works: a dispatcher
/// stopped with SIGSTOP, stuck in the kernel or starved still holds its locks. The heartbeat is
/// what `status` (and `resume`, waiting for an acknowledgement) tells a working dispatcher by.
package final class DispatcherPresence: Sendable {
    /// How often the record is rewritten.
    static let interval = 1.0
    /// A heartbeat older than this: the dispatcher is not responding. Several beats, so that a
    /// loaded machine's late timer is not mistaken for a stall.
    static let respondingWithin = 5.0

    let records: DispatcherRecordFolder
    private let name = "\(DispatcherRecord.instance).json"
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)
    /// This dispatcher's providers now, written with every heartbeat.
    private let providers: @Sendable () -> [ProviderRuntime]

    init(spool: Spool, providers: @escaping @Sendable () -> [ProviderRuntime] = { [] }) {
        records = DispatcherRecordFolder(directory: Self.directory(spool))
        self.providers = providers
    }

    static func directory(_ spool: Spool) -> URL { spool.stateDirectory.appendingPathComponent("dispatchers") }

    /// Writes the first record, sweeps records of dispatchers that are gone, and beats.
    func start() {
        mkdir(records.directory.path, 0o700)
        let now = Date()
        for seen in Self.all(records, now: now) where seen.isGone { unlink(records.path(seen.file)) }
        for (file, modified) in records.entries() where file.hasPrefix(".") && now.timeIntervalSince1970 - modified > 60 {
            unlink(records.path(file))                // a temporary file left by a crash
        }
        beat()
        timer.withLock { t in
            guard t == nil else { return }
            let source = DispatchSource.makeTimerSource(queue: .global(qos: .userInitiated))
            source.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(100))
            source.setEventHandler { [weak self] in self?.beat() }
            source.resume()
            t = source
        }
    }

    /// Rewrites the record; where that fails (a full disk: the temporary file gets no block)
    /// the record's modification time is set instead, which readers take as a heartbeat too, so
    /// a full disk does not make a working dispatcher look stalled.
    private func beat() {
        if !records.replace(name, with: .current(providers: providers())) { utimensat(AT_FDCWD, records.path(name), nil, 0) }
    }

    /// Stops beating and removes the record: this dispatcher is no longer running.
    func stop() {
        timer.withLock { t in
            t?.cancel()
            t = nil
        }
        unlink(records.path(name))
    }

    deinit { timer.withLock { $0?.cancel() } }

    /// A dispatcher as its record shows it.
    package struct Seen: Sendable {
        var file: String
        var record: DispatcherRecord
        /// Seconds since its last heartbeat (0 when the heartbeat is ahead of this clock).
        var age: Double
        /// Its process no longer exists: a record left by a crash, not a dispatcher.
        var isGone: Bool

        package var isResponding: Bool { age < DispatcherPresence.respondingWithin }

        package func json() -> JSONValue {
            .object([("pid", .int(Int64(record.pid))), ("responding", .bool(isResponding)),
                     ("heartbeat_age_s", .int(Int64(age.rounded(.down))))])
        }

        /// `dispatcher pid N responding` / `dispatcher pid N not responding (no heartbeat for 12 s)`.
        package var line: String {
            isResponding ? "dispatcher pid \(record.pid) responding"
                : "dispatcher pid \(record.pid) not responding (no heartbeat for \(Int(age.rounded(.down))) s)"
        }
    }

    /// The providers of the responding dispatchers among `dispatchers`, merged by name: what
    /// `status --json` and the dashboard's System page show as `providers`.
    package static func providers(of dispatchers: [Seen]) -> [ProviderRuntime] {
        ProviderRuntime.merged(dispatchers.filter(\.isResponding).flatMap(\.record.providers))
    }

    /// The dispatchers running on `spool` (records left by crashed ones are not listed),
    /// least responsive first.
    package static func running(on spool: Spool, now: Date = Date()) -> [Seen] {
        all(DispatcherRecordFolder(directory: directory(spool)), now: now).filter { !$0.isGone }
            .sorted { ($0.age, $0.record.pid) > ($1.age, $1.record.pid) }
    }

    private static func all(_ records: DispatcherRecordFolder, now: Date) -> [Seen] {
        records.entries().compactMap { entry -> Seen? in
            guard !entry.name.hasPrefix("."), let record = records.read(entry.name) else { return nil }
            // The later of the heartbeat written and the file's time (`beat` on a full disk).
            let age = max(0, min(now.timeIntervalSince(record.heartbeat), now.timeIntervalSince1970 - entry.modified))
            return Seen(file: entry.name, record: record, age: age, isGone: !isAlive(record))
        }
    }

    /// Whether the dispatcher of a record still exists: its pid is alive and, where
    /// `/proc` tells, that process started before the record's heartbeat (else the pid was
    /// reused after the dispatcher was killed, and the record is a leftover).
    private static func isAlive(_ record: DispatcherRecord) -> Bool {
        if kill(record.pid, 0) != 0 && errno == ESRCH { return false }
        guard let started = processStart(record.pid) else { return true }
        return started <= record.heartbeat.timeIntervalSince1970 + 1
    }

    /// When process `pid` started (seconds since the epoch), from `/proc` (Linux); nil elsewhere.
    private static func processStart(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "pid (comm)": state is field 3, starttime field 22 (clock ticks after boot).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]), let boot = bootTime else { return nil }
        return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private static let bootTime: Double? = {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }()
}
