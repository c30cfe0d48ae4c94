import Foundation
import PushspoolKit

/// `results ID`: a job's result log. The spool's own `results/<id>.jsonl` when this host accepted
/// the job; otherwise, with a PostgreSQL registry, the log as the shared queue holds it (the job
/// line, every outcome recorded by any host, the summary once it ended), so any host can read any
/// job's results, even while the host that accepted it is down.
enum ResultsCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals.count == 1, let id = args.positionals.first else {
            throw CLIError(.usage, "results: expected one job id, e.g. pushspool results spring-sale")
        }
        if let problem = Identifier.jobIDProblem(id) { throw CLIError(.usage, "results: job id \(problem)") }
        let runtime = try Runtime(args)
        if args.has("funnel") {
            guard let funnel = try FunnelReport.funnel(id, runtime: runtime, command: "results") else {
                throw CLIError(.usage, "results: no job \(id) here, in the registry or in the shared queue")
            }
            if args.has("json") { print(funnel.json.encodedString) } else { funnel.lines.forEach { print($0) } }
            return .ok
        }
        if args.has("json") { throw CLIError(.usage, "results: --json goes with --funnel (the result log is JSON Lines already)") }
        let local = runtime.spool.resultURL(jobID: id)
        if let handle = FileHandle(forReadingAtPath: local.path) {
            defer { try? handle.close() }
            while let chunk = try? handle.read(upToCount: 1 << 16), !chunk.isEmpty {
                StandardOutput.shared.write(String(decoding: chunk, as: UTF8.self))
            }
            return .ok
        }
        guard let queue = EngineSetup.sharedQueue(config: runtime.config) else {
            let missing = "results: no result log for job \(id) in \(runtime.spool.url(.results).path)"
            // The registry's variable is not set here: the shared queue, where another host's
            // job would be, could not be asked. Say so, not only that no log is here.
            if let unset = runtime.config.unsetSecrets["registry"] {
                throw CLIError(.config, missing + ", and the shared queue was not asked: registry: \(unset)")
            }
            throw CLIError(.usage, missing)
        }
        defer { queue.close() }
        let found: Bool
        do {
            found = try queue.results(id) { StandardOutput.shared.write($0) }
        } catch {
            throw CLIError(.ioError, "results: the shared queue in \(queue.location): \(RegistryError.detail(error))")
        }
        if !found {
            let days = runtime.config.queue.keepDays
            let kept = days > 0 ? " (it deletes jobs \(days) day\(days == 1 ? "" : "s") after they end: queue.keep_days)" : ""
            throw CLIError(.usage, "results: no job \(id) in \(runtime.spool.url(.results).path) or in the shared queue in \(queue.location)\(kept)")
        }
        return .ok
    }
}
