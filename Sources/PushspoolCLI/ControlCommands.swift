import PushspoolKit
import Foundation
import PushspoolCore

/// `cancel ID`, `pause ID`, `resume ID`: an operator's request about one job, written into
/// `control/` for the dispatchers (which watch it and act at once), and with the shared queue on
/// into PostgreSQL for every host, through `SharedSteering`.
enum ControlCommands {
    static func cancel(_ args: Arguments) throws(CLIError) -> ExitCode { try request(.cancel, args, command: "cancel") }
    static func pause(_ args: Arguments) throws(CLIError) -> ExitCode { try request(.pause, args, command: "pause") }

    static func resume(_ args: Arguments) throws(CLIError) -> ExitCode {
        let (steering, id) = try target(args, command: "resume")
        defer { steering.queue?.close() }
        // Every host's share of a queued job goes on (its origin's own pause request included).
        let steered: SharedSteering.Steered<(folder: Spool.Folder, resumed: JobSteering.Resumed)>
        do { steered = try steering.resume(id: id) } catch { throw cliError(error, command: "resume") }
        guard let done = steered.local else {
            print("resumed job \(id) (in the shared queue): every host takes its chunks again within a second")
            return .ok
        }
        let job = "job \(id) (in \(done.folder.rawValue)/)"
        switch done.resumed {
        case .notPaused:
            print("\(job) is not paused: nothing to resume")
        case .acknowledged(let pid):
            print("resumed \(job): dispatcher pid \(pid) continues it, sending only what it has not sent")
        case .noDispatcher:
            print("resumed \(job); no dispatcher is running: the next `pushspool run` continues it")
        case .unacknowledged(let pid):
            print("resumed \(job); dispatcher pid \(pid) has not acknowledged it yet (see `pushspool status`): it continues the job when it next looks at control/")
        }
        return .ok
    }

    private static func request(_ kind: ControlRequest, _ args: Arguments, command: String) throws(CLIError) -> ExitCode {
        let (steering, id) = try target(args, command: command)
        defer { steering.queue?.close() }
        let steered: SharedSteering.Steered<(folder: Spool.Folder, file: String, already: Bool)>
        do { steered = try steering.request(kind, id: id) } catch { throw cliError(error, command: command) }
        guard let placed = steered.local else {
            // A job another host accepted: every host holding a chunk of it stops within a second.
            print("\(kind.rawValue) requested: job \(id) (in the shared queue); every host stops sending it within a second: requests in flight finish"
                  + (kind == .cancel ? ", and its summary, written by the host that accepted it, says cancelled" : ", until `pushspool resume \(id)` on any host"))
            return .ok
        }
        if placed.already {
            print("job \(id) (\(placed.folder.rawValue)/\(placed.file)) already has a \(kind.rawValue) request")
            return .ok
        }
        let where_ = placed.folder == .incoming ? "waiting in incoming/" : "in active/"
        switch kind {
        case .cancel:
            print("cancel requested: job \(id) (\(where_)); a running dispatcher ends it within a second: requests in flight finish, nothing more is sent, and its summary says cancelled with the count not sent")
        case .pause:
            print("pause requested: job \(id) (\(where_)); a running dispatcher stops sending it within a second and keeps it in active/ until `pushspool resume \(id)`")
        }
        return .ok
    }

    private static func cliError(_ error: JobSteering.Failure, command: String) -> CLIError {
        CLIError(error.kind == .io ? .ioError : .usage, "\(command): \(error.description)")
    }

    /// The job's id and how to steer it: this spool, and the shared queue of a PostgreSQL registry
    /// when the config has one.
    private static func target(_ args: Arguments, command: String) throws(CLIError) -> (SharedSteering, String) {
        guard args.positionals.count == 1, let id = args.positionals.first else {
            throw CLIError(.usage, "\(command): expected one job id, e.g. pushspool \(command) spring-sale")
        }
        if let problem = Identifier.jobIDProblem(id) { throw CLIError(.usage, "\(command): job id \(problem)") }
        let runtime = try Runtime(args)
        return (SharedSteering(spool: runtime.spool, queue: EngineSetup.sharedQueue(config: runtime.config)), id)
    }
}
