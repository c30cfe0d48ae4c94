import Foundation
import PushspoolCore

/// `cancel ID`, `pause ID`, `resume ID`: an operator's request about one job, written into
/// `control/` for the dispatchers (which act within a second). Only jobs still waiting in
/// `incoming/` or claimed in `active/` can be steered; anything else is an error naming why.
enum ControlCommands {
    static func cancel(_ args: Arguments) throws(CLIError) -> ExitCode { try request(.cancel, args, command: "cancel") }
    static func pause(_ args: Arguments) throws(CLIError) -> ExitCode { try request(.pause, args, command: "pause") }

    static func resume(_ args: Arguments) throws(CLIError) -> ExitCode {
        let (spool, controls, id) = try target(args, command: "resume")
        guard FileManager.default.fileExists(atPath: controls.url(id, .pause).path) else {
            let (folder, _) = try locate(id, in: spool, command: "resume")
            throw CLIError(.usage, "resume: job \(id) (in \(folder.rawValue)/) is not paused")
        }
        let (folder, _) = (try? locate(id, in: spool, command: "resume")) ?? (.active, "")
        do {
            try FileManager.default.removeItem(at: controls.url(id, .pause))
        } catch {
            throw CLIError(.ioError, "resume: cannot remove \(controls.url(id, .pause).path): \(error.localizedDescription)")
        }
        print("resumed job \(id) (in \(folder.rawValue)/): a running dispatcher continues it within a second, sending only what it has not sent")
        return .ok
    }

    private static func request(_ kind: ControlRequest, _ args: Arguments, command: String) throws(CLIError) -> ExitCode {
        let (spool, controls, id) = try target(args, command: command)
        let (folder, file) = try locate(id, in: spool, command: command)
        if FileManager.default.fileExists(atPath: controls.url(id, kind).path) {
            print("job \(id) (\(folder.rawValue)/\(file)) already has a \(kind.rawValue) request")
            return .ok
        }
        do {
            try controls.write(kind, id: id)
        } catch {
            throw CLIError(.ioError, "\(command): \(error)")
        }
        let where_ = folder == .incoming ? "waiting in incoming/" : "in active/"
        switch kind {
        case .cancel:
            print("cancel requested: job \(id) (\(where_)); a running dispatcher ends it within a second: requests in flight finish, nothing more is sent, and its summary says cancelled with the count not sent")
        case .pause:
            print("pause requested: job \(id) (\(where_)); a running dispatcher stops sending it within a second and keeps it in active/ until `pushspool resume \(id)`")
        }
        return .ok
    }

    private static func target(_ args: Arguments, command: String) throws(CLIError) -> (Spool, JobControls, String) {
        guard args.positionals.count == 1, let id = args.positionals.first else {
            throw CLIError(.usage, "\(command): expected one job id, e.g. pushspool \(command) spring-sale")
        }
        guard JobParser.isValidID(id) else {
            throw CLIError(.usage, "\(command): \"\(id)\" is not a job id (1 to 128 of A-Z a-z 0-9 . _ -)")
        }
        let spool = try Runtime(args).spool
        return (spool, JobControls(directory: spool.url(.control)), id)
    }

    /// Where the job with this id is: `incoming/` or `active/`, and its file name.
    static func locate(_ id: String, in spool: Spool, command: String) throws(CLIError) -> (Spool.Folder, String) {
        for folder in [Spool.Folder.active, .incoming] {
            // The usual case first: the file is named after the id.
            let named = "\(id).json"
            if FileManager.default.fileExists(atPath: spool.url(folder, named).path),
               StatusCommand.jobID(spool, folder, named) == id { return (folder, named) }
        }
        for folder in [Spool.Folder.active, .incoming] {
            for name in spool.jobs(in: folder) where StatusCommand.jobID(spool, folder, name) == id { return (folder, name) }
        }
        if let log = ResultLogContents.read(spool.resultURL(jobID: id)), let status = log.summaryStatus {
            throw CLIError(.usage, "\(command): job \(id) has already ended (\(status)); see \(spool.resultURL(jobID: id).path)")
        }
        throw CLIError(.usage, "\(command): no job with id \(id) is waiting in incoming/ or running in active/ of \(spool.root.path)")
    }
}
