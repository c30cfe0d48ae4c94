import PushspoolKit
import Foundation
import PushspoolCore

/// `cancel ID`, `pause ID`, `resume ID`: an operator's request about one job, written into
/// `control/` for the dispatchers (which watch it and act at once), through `JobSteering`.
enum ControlCommands {
    static func cancel(_ args: Arguments) throws(CLIError) -> ExitCode { try request(.cancel, args, command: "cancel") }
    static func pause(_ args: Arguments) throws(CLIError) -> ExitCode { try request(.pause, args, command: "pause") }

    static func resume(_ args: Arguments) throws(CLIError) -> ExitCode {
        let (steering, id) = try target(args, command: "resume")
        let queue = try sharedQueue(args)
        // Every host's share of a queued job goes on (its origin's own pause request included).
        let shared = try steerShared(queue, id, nil, command: "resume")
        let done: (folder: Spool.Folder, resumed: JobSteering.Resumed)
        do { done = try steering.resume(id: id) } catch {
            guard error.kind == .unknown, shared else { throw cliError(error, command: "resume") }
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
        let queue = try sharedQueue(args)
        let shared = try steerShared(queue, id, kind, command: command)
        let placed: (folder: Spool.Folder, file: String, already: Bool)
        do { placed = try steering.request(kind, id: id) } catch {
            guard error.kind == .unknown, shared else { throw cliError(error, command: command) }
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

    /// The shared queue of a PostgreSQL registry, if the config has one.
    private static func sharedQueue(_ args: Arguments) throws(CLIError) -> PostgresJobQueue? {
        EngineSetup.sharedQueue(config: try Runtime.loadConfig(args))
    }

    /// Steers a job in the shared queue (every host's share); false: not there (or ended).
    private static func steerShared(_ queue: PostgresJobQueue?, _ id: String, _ kind: ControlRequest?, command: String) throws(CLIError) -> Bool {
        guard let queue else { return false }
        defer { queue.close() }
        do { return try queue.steer(id, kind) } catch {
            throw CLIError(.ioError, "\(command): the shared queue in \(queue.location): \(RegistryError.detail(error))")
        }
    }

    private static func cliError(_ error: JobSteering.Failure, command: String) -> CLIError {
        CLIError(error.kind == .io ? .ioError : .usage, "\(command): \(error.description)")
    }

    private static func target(_ args: Arguments, command: String) throws(CLIError) -> (JobSteering, String) {
        guard args.positionals.count == 1, let id = args.positionals.first else {
            throw CLIError(.usage, "\(command): expected one job id, e.g. pushspool \(command) spring-sale")
        }
        if let problem = Identifier.jobIDProblem(id) { throw CLIError(.usage, "\(command): job id \(problem)") }
        return (JobSteering(spool: try Runtime(args).spool), id)
    }
}
