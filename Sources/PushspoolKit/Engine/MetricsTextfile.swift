import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The metrics file of one process, so that several processes sharing `metrics.textfile` (two
/// dispatchers on one spool, `run` and `serve`, dispatchers of several spools writing into
/// node_exporter's textfile folder) never overwrite each other's counters.
///
/// node_exporter's textfile collector reads every `*.prom` file of its folder and merges them;
/// each process therefore writes a file of its own, written atomically, and labels each of its
/// samples so that no two files hold the same series. A process takes the lowest free *slot*
/// for its role — an exclusive `flock` on a hidden `.<file>.lock` beside it, held for its life and
/// dropped by the kernel when it dies — so names stay stable across restarts and a restarted
/// process takes over its predecessor's file (a counter reset, as Prometheus expects of a
/// restart), instead of leaving files behind for each pid.
///
///     run, slot 0     metrics.textfile itself          pushspool.prom
///     run, slot n     <stem>.run-<n>.prom              pushspool.run-1.prom
///     serve, slot n   <stem>.serve-<n>.prom            pushspool.serve-0.prom
///
/// Every sample carries `spool_instance` (`metrics.instance`, else `<host>:<spool path>`) and
/// `process` (`run-0`, `serve-0`…).
package final class MetricsTextfile: Sendable {
    package enum Role: String, Sendable { case run, serve }

    let path: String
    let process: String
    let labels: [(String, String)]
    private let lockFD: Int32

    /// Takes the lowest free slot for `role` beside `configured` (a resolved path). Throws when
    /// the folder cannot hold the lock files (missing, not writable), naming it.
    init(configured: String, role: Role, instance: String) throws(SpoolError) {
        for slot in 0..<1000 {
            let path = Self.path(configured: configured, role: role, slot: slot)
            let url = URL(fileURLWithPath: path)
            let lock = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).lock").path
            let fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
            guard fd >= 0 else { throw SpoolError("metrics: cannot create \(lock): \(String(cString: strerror(errno)))") }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                self.path = path
                self.process = "\(role.rawValue)-\(slot)"
                self.labels = [("spool_instance", instance), ("process", process)]
                lockFD = fd
                return
            }
            close(fd)
        }
        throw SpoolError("metrics: every slot beside \(configured) is taken")
    }

    deinit { close(lockFD) }

    /// This process's file for `config.metrics` (nil without `textfile`), or nil with a warning
    /// naming the folder when no slot can be taken there: the work goes on without metrics.
    package static func forProcess(_ config: Config, spool: Spool, role: Role, log: Log) -> MetricsTextfile? {
        guard let textfile = config.metrics.textfile else { return nil }
        let instance = config.metrics.instance ?? "\(HostName.current):\(spool.root.path)"
        do {
            return try MetricsTextfile(configured: config.resolve(textfile).path, role: role, instance: instance)
        } catch {
            log.warning("\(error); no metrics file is written")
            return nil
        }
    }

    /// The file of `slot` for `role`: `metrics.textfile` itself for the first dispatcher, else a
    /// sibling named after the role and slot.
    static func path(configured: String, role: Role, slot: Int) -> String {
        if role == .run && slot == 0 { return configured }
        let stem = configured.hasSuffix(".prom") ? String(configured.dropLast(5)) : configured
        return "\(stem).\(role.rawValue)-\(slot).prom"
    }

    /// The dispatchers' files beside `configured` that exist now (slot 0 first), for `serve`'s
    /// `/metrics`.
    package static func dispatcherFiles(configured: String) -> [String] {
        let url = URL(fileURLWithPath: configured)
        let dir = url.deletingLastPathComponent().path
        let stem = (configured.hasSuffix(".prom") ? String(url.lastPathComponent.dropLast(5)) : url.lastPathComponent) + ".run-"
        let siblings = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasPrefix(stem) && $0.hasSuffix(".prom") }
            .compactMap { name in Int(name.dropFirst(stem.count).dropLast(5)).map { (slot: $0, path: "\(dir)/\(name)") } }
            .sorted { $0.slot < $1.slot }.map(\.path)
        return (FileManager.default.fileExists(atPath: configured) ? [configured] : []) + siblings
    }

    /// Writes `text` (exposition format) with this process's labels on every sample, atomically.
    package func write(_ text: String) throws {
        try Metrics.write(Metrics.labelled(text, with: labels), to: path)
    }
}
