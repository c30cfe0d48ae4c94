import Synchronization

/// A place in a result log: its first `offset` bytes, and the delivery lines they hold, counted.
public struct LogPosition: Sendable, Equatable {
    public var offset: Int64
    public var delivered = 0, failed = 0, unregistered = 0, retries = 0, capped = 0

    public init(offset: Int64, delivered: Int = 0, failed: Int = 0, unregistered: Int = 0, retries: Int = 0, capped: Int = 0) {
        self.offset = offset
        self.capped = capped
        self.delivered = delivered
        self.failed = failed
        self.unregistered = unregistered
        self.retries = retries
    }
}

/// Where a send job can pick up after a crash without reading its whole result log or walking
/// the registry rows it already went past: every device at registry key `after` or below is done
/// with (its final line is in the log, or it needs none), and every line in the log's first
/// `log.offset` bytes outside `tails` concerns such a device. A resume therefore takes the counts
/// of those bytes from `log`, reads only the lines after them and in `tails` (the targets finished
/// out of order), and scans the registry after `after`.
public struct ResumePoint: Sendable, Equatable {
    public var after: Int64
    /// Devices the audience matched at `after` or below (the job's summary counts them all).
    public var matched: Int
    public var log: LogPosition
    /// Earlier runs' lines that may concern devices past `after` (byte ranges, counted in `log`).
    public var tails: [Range<Int64>]

    public init(after: Int64, matched: Int = 0, log: LogPosition, tails: [Range<Int64>] = []) {
        self.after = after
        self.matched = matched
        self.log = log
        self.tails = tails
    }

    /// At most this many tails are kept; more are merged into one range around them all (read
    /// for nothing but the targets they name, so a wider range costs time, never correctness).
    public static let maxTails = 8
}

/// Follows one run of a send job through its registry scan (keys in ascending order) and keeps
/// its `ResumePoint` current.
///
/// The lowest target still in flight bounds it: every key below it was finished or passed over,
/// and every line this run wrote before handing it out concerns a lower key. The lines this run
/// only read, after the point it started from, may concern any key (finished out of order before
/// the crash): they stay a tail to read again, as do the tails of that point.
public final class ResumeTracker: Sendable {
    private struct State {
        var lastScanned: Int64
        var matched: Int
        /// Targets handed out and not yet final, by hand-out order: key, the devices matched
        /// before it and the log position then.
        var pending: [Int: (key: Int64, matchedBefore: Int, at: LogPosition)] = [:]
        var nextSeq = 0
        var lowSeq = 0
    }
    private let state: Mutex<State>
    private let tails: [Range<Int64>]

    /// `start`: the point this run resumed from (key 0 at the log's start for a first run or a
    /// whole read); `runStart`: the log's size when this run began.
    public init(start: ResumePoint, runStart: Int64) {
        state = Mutex(State(lastScanned: start.after, matched: start.matched))
        var tails = start.tails
        if start.log.offset < runStart { tails.append(start.log.offset..<runStart) }
        if tails.count > ResumePoint.maxTails, let low = tails.map(\.lowerBound).min(), let high = tails.map(\.upperBound).max() {
            tails = [low..<high]
        }
        self.tails = tails
    }

    /// A target handed out at `key`, the log then at `position`; returns its ticket for `finished`.
    public func handedOut(key: Int64, at position: LogPosition) -> Int {
        state.withLock { s in
            s.lastScanned = key
            s.pending[s.nextSeq] = (key, s.matched, position)
            s.matched += 1
            s.nextSeq += 1
            return s.nextSeq - 1
        }
    }

    /// The target's final line is written.
    public func finished(_ ticket: Int) {
        state.withLock { s in
            s.pending.removeValue(forKey: ticket)
            while s.lowSeq < s.nextSeq && s.pending[s.lowSeq] == nil { s.lowSeq += 1 }
        }
    }

    /// A device the scan went past without sending (finished before, or nothing to send it).
    public func passed(key: Int64) {
        state.withLock { s in
            s.lastScanned = key
            s.matched += 1
        }
    }

    /// The point to resume from, with the log now at `current`.
    public func point(current: LogPosition) -> ResumePoint {
        state.withLock { s in
            if s.lowSeq < s.nextSeq, let lowest = s.pending[s.lowSeq] {
                return ResumePoint(after: lowest.key - 1, matched: lowest.matchedBefore, log: lowest.at, tails: tails)
            }
            return ResumePoint(after: s.lastScanned, matched: s.matched, log: current, tails: tails)
        }
    }
}
