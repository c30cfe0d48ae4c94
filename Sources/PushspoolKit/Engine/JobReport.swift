import PushspoolCore

/// What happened to one job in one dispatcher run (printed by the CLI, one line each). It is an
/// `Error` too: a runner step that cannot go on throws the report to give.
public struct JobReport: Error, Sendable, CustomStringConvertible {
    public enum Outcome: Sendable, Equatable {
        /// Every target reached a final outcome; the job moved to `done/`.
        /// `matched`: devices the audience matched in the registry (nil when a hub resolved the tags).
        /// `capped`: devices over their app's frequency cap (not sent).
        case done(delivered: Int, failed: Int, unregistered: Int, retries: Int, matched: Int?, durationMS: Int, capped: Int = 0)
        /// A registration change was applied.
        case registry(String)
        /// The job could not be processed; it moved to `failed/`. One sentence.
        case failed(String)
        /// Its id already has a completed result log: not sent again.
        case duplicate
        /// Left in `active/` to be resumed (interrupted by a stop, or an I/O error such as a full disk).
        case interrupted(StopReason)
        /// An operator cancelled it: the targets not yet sent never will be; moved to `done/`.
        case cancelled(delivered: Int, failed: Int, unregistered: Int, retries: Int, notSent: Int, durationMS: Int, capped: Int = 0)
        /// An operator paused it: it stays in `active/` until `pushspool resume`.
        case paused
        /// Another live dispatcher owns this job, or a job with this id, right now.
        case busy
        /// Another job file with this id is running in this dispatcher: this one is run again
        /// when that one ends (and reported then, usually as a duplicate).
        case waiting
        /// Gone before it could be taken (another dispatcher finished it): nothing to report.
        case skipped
    }

    public var id: String
    public var file: String
    public var outcome: Outcome

    /// One line per report whatever a writer named its file: control and bidi characters are escaped.
    public var description: String { TerminalText.escaped(line) }

    /// ", capped N" when a frequency cap held devices back; nothing otherwise.
    private static func capped(_ n: Int) -> String { n > 0 ? ", capped \(n)" : "" }

    private var line: String {
        switch outcome {
        case let .done(_, _, _, _, 0, ms, _):
            return "job \(id): done — warning: no registered device matches its audience, nothing sent (\(ms) ms)"
        case let .done(d, f, u, r, _, ms, c):
            return "job \(id): done — delivered \(d), failed \(f), unregistered \(u)\(Self.capped(c)), retries \(r) (\(ms) ms)"
        case .registry(let what): return "job \(id): done — \(what)"
        case let .cancelled(d, f, u, _, n, ms, c):
            return "job \(id): cancelled — delivered \(d), failed \(f), unregistered \(u)\(Self.capped(c)), not sent \(n) (\(ms) ms)"
        case .paused: return "job \(id): paused — left in active/ until `pushspool resume \(id)`"
        case .failed(let why): return "job \(id): failed — \(why) (moved to failed/\(file))"
        case .duplicate: return "job \(id): duplicate of a completed job, not sent again (moved to done/\(file))"
        case .interrupted(let why): return "job \(id): left in active/ to resume — \(why)"
        case .busy: return "job \(id): another dispatcher is running a job with this id; left in active/"
        case .waiting: return "job \(id): waits in active/ for the job with the same id running here"
        case .skipped: return "job \(id): finished by another dispatcher"
        }
    }
}
