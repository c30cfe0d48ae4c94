import Foundation
import PushspoolCore
import Synchronization

/// One log event: a level, a message and metadata (job id, provider, platform, counts…).
/// Never put credentials (tokens, keys, secrets, device handles) in either.
public struct LogEvent: Sendable {
    public var time: Date
    public var level: Log.Level
    public var message: String
    public var metadata: [(String, String)]
}

/// Where events go: a stream (stderr in a given format) or, in tests, a collector. In the spirit
/// of swift-log's `LogHandler`, without the dependency.
public protocol LogHandler: Sendable {
    func emit(_ event: LogEvent)
    /// Whether lines go to a log collector (logfmt, json) rather than a person (text, tests).
    var isStructured: Bool { get }
}

extension LogHandler {
    public var isStructured: Bool { false }
}

/// The keys of log metadata, one list: the ids an event concerns go here, not into its message,
/// so a log collector can select by them (`job=spring`) and a person still reads them first.
public enum LogKey: String, Sendable {
    case job, file, kind, component, provider, count, status, reason
    case delivered, failed, unregistered, retries, capped, notSent = "not_sent", durationMS = "duration_ms"
    case method, route, user, aborted, listen, tls
}

/// The dispatcher's logger: levels, metadata, a swappable handler, and repeated events counted
/// instead of repeated (an episode of one refusal across 10,000 targets is one line, then a
/// count). A `Log` is cheap to derive with more metadata: `log.with(.job, id)`.
public final class Log: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var label: String { ["debug", "info", "warning", "error"][rawValue] }
        public init?(label: String) {
            guard let l = Level.allCases.first(where: { $0.label == label }) else { return nil }
            self = l
        }
    }

    /// The handler and level, shared by every logger derived from one root.
    final class Sink: Sendable {
        struct Setup { var handler: any LogHandler; var minimum: Level }
        let setup: Mutex<Setup>
        let repeats: RepeatFilter
        init(_ handler: any LogHandler, minimum: Level, window: Double) {
            setup = Mutex(Setup(handler: handler, minimum: minimum))
            repeats = RepeatFilter(window: window)
        }
    }

    private let sink: Sink
    public let metadata: [(String, String)]

    public init(minimum: Level = .info, handler: any LogHandler = StreamLogHandler(format: .text),
                repeatWindow: Double = 60) {
        sink = Sink(handler, minimum: minimum, window: repeatWindow)
        metadata = []
    }

    private init(sink: Sink, metadata: [(String, String)]) {
        self.sink = sink
        self.metadata = metadata
    }

    /// A logger whose events carry `key=value` too.
    public func with(_ key: LogKey, _ value: String) -> Log {
        Log(sink: sink, metadata: metadata + [(key.rawValue, value)])
    }

    public var minimum: Level { sink.setup.withLock { $0.minimum } }

    /// Whether lines go to a log collector (logfmt, json) rather than a person (text, tests).
    public var isStructured: Bool {
        sink.setup.withLock { $0.handler.isStructured }
    }

    public func configure(handler: (any LogHandler)? = nil, minimum: Level? = nil) {
        sink.setup.withLock { s in
            if let handler { s.handler = handler }
            if let minimum { s.minimum = minimum }
        }
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ extra: [(LogKey, String)] = []) {
        let (handler, minimum) = sink.setup.withLock { ($0.handler, $0.minimum) }
        guard level >= minimum else { return }
        // Every line, in every format, through the one redaction (configured secrets, passwords
        // in connection strings).
        let event = LogEvent(time: Date(), level: level, message: Redaction.scrub(message()),
                             metadata: (metadata + extra.map { ($0.0.rawValue, $0.1) }).map { ($0.0, Redaction.scrub($0.1)) })
        // Debug events are for tracing: every one is wanted. Others are counted when repeated.
        guard level == .debug else {
            for e in sink.repeats.admit(event) { handler.emit(e) }
            return
        }
        handler.emit(event)
    }

    public func debug(_ m: @autoclosure () -> String, _ extra: [(LogKey, String)] = []) { log(.debug, m(), extra) }
    public func info(_ m: @autoclosure () -> String, _ extra: [(LogKey, String)] = []) { log(.info, m(), extra) }
    public func warning(_ m: @autoclosure () -> String, _ extra: [(LogKey, String)] = []) { log(.warning, m(), extra) }
    public func error(_ m: @autoclosure () -> String, _ extra: [(LogKey, String)] = []) { log(.error, m(), extra) }

    /// Emits the counts of events held back as repeats (at exit, and before a summary line).
    public func flushRepeats() {
        let handler = sink.setup.withLock { $0.handler }
        for e in sink.repeats.drain() { handler.emit(e) }
    }
}

/// The first of a run of identical events (same level, message and metadata) goes through; the
/// rest within `window` seconds are counted, and the count is its own event when the window ends
/// (at the next occurrence after it) or at `drain()`.
final class RepeatFilter: Sendable {
    private struct Seen { var first: LogEvent; var since: Date; var suppressed: Int }
    private let seen = Mutex<[String: Seen]>([:])
    let window: Double

    init(window: Double) { self.window = window }

    private static func key(_ e: LogEvent) -> String {
        "\(e.level.rawValue)\u{1}\(e.message)\u{1}" + e.metadata.map { "\($0.0)=\($0.1)" }.joined(separator: "\u{1}")
    }

    func admit(_ event: LogEvent) -> [LogEvent] {
        guard window > 0 else { return [event] }
        let key = Self.key(event)
        return seen.withLock { seen -> [LogEvent] in
            // Keep the table small: forget quiet entries that have nothing to report.
            if seen.count > 1024 { seen = seen.filter { $0.value.suppressed > 0 } }
            guard var s = seen[key] else {
                seen[key] = Seen(first: event, since: event.time, suppressed: 0)
                return [event]
            }
            if event.time.timeIntervalSince(s.since) < window {
                s.suppressed += 1
                seen[key] = s
                return []
            }
            let summary = s.suppressed > 0 ? [Self.summary(s, at: event.time)] : []
            seen[key] = Seen(first: event, since: event.time, suppressed: 0)
            return summary + [event]
        }
    }

    func drain() -> [LogEvent] {
        let now = Date()
        return seen.withLock { seen -> [LogEvent] in
            let out = seen.values.filter { $0.suppressed > 0 }.sorted { $0.since < $1.since }.map { Self.summary($0, at: now) }
            seen.removeAll()
            return out
        }
    }

    private static func summary(_ s: Seen, at time: Date) -> LogEvent {
        var e = s.first
        e.time = time
        e.message = "(repeated \(s.suppressed) more time\(s.suppressed == 1 ? "" : "s") in \(Int(time.timeIntervalSince(s.since).rounded())) s) " + e.message
        e.metadata.append(("repeated", String(s.suppressed)))
        return e
    }
}

/// Writes one line per event to stderr: `text` for people (`pushspool: warning: message
/// key=value`), `logfmt` and `json` for log collectors.
public struct StreamLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable { case text, logfmt, json }
    public let format: Format
    private let write: @Sendable (String) -> Void

    /// `board`: the live progress lines on stderr, if any, which the lines must go above.
    public init(format: Format, board: TerminalBoard? = nil, write: (@Sendable (String) -> Void)? = nil) {
        self.format = format
        self.write = write ?? { line in
            let out = { FileHandle.standardError.write(Data(line.utf8)) }
            if let board { board.above(out) } else { out() }
        }
    }

    public var isStructured: Bool { format != .text }

    public func emit(_ event: LogEvent) { write(Self.render(event, format) + "\n") }

    public static func render(_ e: LogEvent, _ format: Format) -> String {
        switch format {
        case .text:
            // For a person the job comes first, as in the run's own lines: `job spring: …`.
            let job = e.metadata.first { $0.0 == LogKey.job.rawValue }.map { "job \(TerminalText.escaped($0.1)): " } ?? ""
            let meta = e.metadata.filter { $0.0 != LogKey.job.rawValue }.map { " \($0.0)=\(logfmtValue($0.1))" }.joined()
            return "pushspool: \(e.level.label): \(job)\(TerminalText.escaped(e.message))\(meta)"
        case .logfmt:
            let fields = [("time", Timestamp.rfc3339(e.time)), ("level", e.level.label), ("msg", e.message)] + e.metadata
            return fields.map { "\($0.0)=\(logfmtValue($0.1))" }.joined(separator: " ")
        case .json:
            var fields: [(String, JSONValue)] = [("time", .string(Timestamp.rfc3339(e.time))),
                                                 ("level", .string(e.level.label)), ("msg", .string(e.message))]
            for (k, v) in e.metadata where !["time", "level", "msg"].contains(k) {
                fields.append((k, Int(v).map { .int(Int64($0)) } ?? .string(v)))
            }
            return JSONValue.object(fields).encodedString
        }
    }

    /// A logfmt value: bare when it is one plain word, else quoted with `"` and `\` escaped and
    /// control and bidi characters as `\n`, `\t`, `\u{…}` (`TerminalText`).
    static func logfmtValue(_ v: String) -> String {
        let plain = !v.isEmpty && v.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "=" && $0 != "\\" }
        if plain { return v }
        return "\"" + TerminalText.escaped(v, quotes: true) + "\""
    }

}
