import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// What the engine shows and exports while it works: one live line per running job on a terminal
/// (redrawn twice a second), and the Prometheus textfile every `interval_seconds` and at exit.
package final class RunMonitor: Sendable {
    private let activity: Activity
    private let metrics: Metrics
    private let spool: Spool
    private let providers: [ProviderState]
    private let controls: JobControls
    private let textfile: MetricsTextfile?
    private let log: Log
    private let board: TerminalBoard
    private let lock = Mutex<Void>(())
    /// Guarded by `lock` (Dispatch sources are not Sendable, but their cancel is thread-safe).
    nonisolated(unsafe) private var timers: [any DispatchSourceTimer] = []
    private let lastWriteFailed = Mutex(false)

    init(activity: Activity, metrics: Metrics, spool: Spool, providers: [ProviderState], controls: JobControls,
         board: TerminalBoard, textfile: MetricsTextfile?, intervalSeconds: Int, log: Log) {
        self.board = board
        self.activity = activity
        self.metrics = metrics
        self.spool = spool
        self.providers = providers
        self.controls = controls
        self.textfile = textfile
        self.log = log
        if board.enabled { every(0.5) { [weak self] in self?.drawProgress() } }
        if textfile != nil { every(Double(intervalSeconds)) { [weak self] in self?.writeMetrics() } }
    }

    private func every(_ seconds: Double, _ work: @escaping @Sendable () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + seconds, repeating: seconds, leeway: .milliseconds(100))
        timer.setEventHandler(handler: work)
        timer.resume()
        lock.withLock { _ in timers.append(timer) }
    }

    /// A job's end: counted, logged as an event (for collectors: in text form the printed
    /// report is that event), and printed above the progress lines.
    func report(_ r: JobReport, print: () -> Void) {
        let status = Self.status(r.outcome)
        metrics.job(status: status)
        var fields: [(LogKey, String)] = [(.job, r.id), (.status, status)]
        switch r.outcome {
        case let .done(d, f, u, retries, _, ms, c), let .cancelled(d, f, u, retries, _, ms, c):
            fields += [(.delivered, String(d)), (.failed, String(f)), (.unregistered, String(u)),
                       (.retries, String(retries)), (.durationMS, String(ms))]
            if c > 0 { fields.append((.capped, String(c))) }
            if case let .cancelled(_, _, _, _, n, _, _) = r.outcome { fields.append((.notSent, String(n))) }
        case .failed(let why): fields.append((.reason, why))
        case .interrupted(let why): fields.append((.reason, why.description))
        default: break
        }
        log.log(log.isStructured ? .info : .debug, "job finished", fields)
        board.above(print)
    }

    /// Stops the timers, clears the progress lines and writes the metrics a last time.
    func finish() {
        lock.withLock { _ in
            timers.forEach { $0.cancel() }
            timers.removeAll()
        }
        board.clear()
        writeMetrics()
    }

    private func drawProgress() {
        board.draw(activity.snapshot().map { p in
            let request = controls.request(for: p.id)
            return Self.line(p, state: request == nil ? p.state : JobState(request: request, running: true))
        })
    }

    /// `job spring-sale: 12034 / 50000 (24%), 812/s, 47 s left, 3 failed, paced over 600 s`
    static func line(_ p: Activity.Progress, state: JobState = .running) -> String {
        var line = "job \(p.id): \(p.finished)"
        if let t = p.targets, t > 0 { line += " / \(t) (\(min(100, p.finished * 100 / t))%)" }
        if let rate = p.rate { line += ", \(Int(rate.rounded()))/s" }
        if let eta = p.eta { line += ", \(Self.duration(eta)) left" }
        if p.failed > 0 { line += ", \(p.failed) failed" }
        if let spread = p.spreadOverSeconds { line += ", paced over \(Self.duration(Double(spread)))" }
        if state != .running { line += " [\(state.rawValue)]" }
        return line
    }

    package static func duration(_ s: Double) -> String {
        let n = Int(s.rounded(.up))
        if n < 120 { return "\(n) s" }
        if n < 7200 { return "\(n / 60) min" }
        return "\(n / 3600) h \(n % 3600 / 60) min"
    }

    private func writeMetrics() {
        guard let textfile else { return }
        var g = Metrics.Gauges()
        for folder in [Spool.Folder.incoming, .active, .done, .failed] {
            g.queue.append((folder.rawValue, spool.count(folder)))
        }
        g.targetsRemaining = activity.targetsRemaining
        g.providers = providers.map { ($0.name, $0.pausedReason != nil) }.sorted { $0.0 < $1.0 }
        g.runtime = providers.map { $0.runtime() }.sorted { $0.name < $1.name }
        do {
            try textfile.write(metrics.render(g))
            lastWriteFailed.withLock { $0 = false }
        } catch {
            // Said once per run of failures, not every interval.
            let first = lastWriteFailed.withLock { f in defer { f = true }; return !f }
            if first { log.warning("metrics: \(error)") }
        }
    }

    static func status(_ o: JobReport.Outcome) -> String {
        switch o {
        case .done, .registry: "done"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .duplicate: "duplicate"
        case .paused: "paused"
        case .interrupted: "interrupted"
        case .busy: "busy"
        case .waiting: "waiting"
        case .skipped: "skipped"
        }
    }
}
