import Foundation

/// Why a job stops producing targets, or why it ends its run in `active/` to be resumed later.
/// Control flow switches on the case; the description is the one sentence reports and logs show.
public enum StopReason: Sendable, Equatable, CustomStringConvertible {
    /// The dispatcher is stopping (a signal, the end of `run --once`): the next run resumes the job.
    case stopping
    /// An operator cancelled the job (`control/<id>.cancel`): what is not sent never will be.
    case cancelled
    /// An operator paused the job (`control/<id>.pause`): it waits in `active/` for a resume.
    case paused
    /// The result log could not be opened, written, set aside or made durable (a full disk). The
    /// sentence says which: sending on would send again what the log cannot record.
    case resultLog(String)
    /// The registry could not be read (or the job's id claimed); the detail is the registry's.
    case registry(String)
    /// Another process holds the registry's write lock (a large import): the next run applies it.
    case registryBusy
    /// The registry's database server cannot be reached; the detail is why.
    case registryUnreachable(String)
    /// A `local_time` job sent every wave that is due: it waits in `active/` for the next one
    /// (its instant, RFC 3339, and its devices), on the dispatcher's timer.
    case nextWave(at: Date, text: String, devices: Int)

    public var description: String {
        switch self {
        case .stopping: "stopping"
        case .cancelled: "cancelled"
        case .paused: "paused"
        case .resultLog(let sentence): sentence
        case .registry(let detail): "registry: \(detail)"
        case .registryBusy: "registry busy (another process is writing it, e.g. an import); the next run applies it"
        case .registryUnreachable(let detail): "registry unreachable (\(detail)); the next run applies it"
        case .nextWave(_, let text, let devices): "waiting for its next local-time wave at \(text) (\(devices == 1 ? "1 device" : "\(devices) devices"))"
        }
    }
}
