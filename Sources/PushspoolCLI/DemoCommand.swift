import PushspoolKit
import Foundation
import Synchronization
import PushspoolCore

/// `pushspool demo`: the zero-credential tour. It runs on a spool of its own (`jobs/demo`, or
/// `--spool DIR`), with its own registry, and every platform routed to the sandbox whatever
/// `pushspool.json` says: it can never reach a real service, take a real job or touch the real
/// registry. Each run starts that spool afresh.
enum DemoCommand {
    static let defaultSpool = "jobs/demo"
    /// Marks a spool as the demo's, so that starting afresh never deletes anyone else's spool.
    static let marker = ".pushspool-demo"

    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard let examples = findExamples() else {
            throw CLIError(.ioError, "demo: cannot find the examples/ folder; run the demo from the pushspool checkout")
        }
        let root = URL(fileURLWithPath: args.value("spool") ?? defaultSpool,
                       relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath + "/")).standardizedFileURL
        try startAfresh(root)
        let runtime = try Runtime(args, builtIn: true, spool: root.path, createSpool: true)
        let spool = runtime.spool
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent(marker).path, contents: Data())

        let registry = try runtime.openRegistry()
        let devices: Int
        do {
            let report = try registry.importJSONL(contentsOf: examples.appendingPathComponent("devices.jsonl"))
            if let first = report.refused.first { throw RegistryError(first) }
            devices = report.imported
        } catch {
            throw CLIError(.dataError, "demo: examples/devices.jsonl: \(error)")
        }
        registry.close()
        print("Seeded the registry \(RegistryLocation.shown(runtime.config)) with \(devices) sample devices from examples/devices.jsonl.")

        let jobDir = examples.appendingPathComponent("jobs")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: jobDir.path)) ?? []).filter(Spool.isJobName).sorted()
        for name in names {
            do {
                try spool.submit(try FileIO.readAll(jobDir.appendingPathComponent(name)), name: name)
            } catch {
                throw CLIError(.ioError, "demo: cannot drop \(name) into the spool: \(error)")
            }
        }
        print("Dropped \(names.count) sample jobs from examples/jobs/ into \(spool.url(.incoming).path)/ (tmp/ → rename → incoming/).")
        print("Dispatching through the sandbox provider (no credentials, nothing leaves this machine):\n")

        // A handful of sample jobs: the demo keeps their reports to judge them.
        let collected = Mutex<[JobReport]>([])
        try RunCommand.dispatch(runtime, once: true) { report in
            collected.withLock { $0.append(report) }
            print("  \(report)")
        }
        let reports = collected.withLock { $0 }

        let outbox = runtime.config.resolve(runtime.config.outboxPath)
        print("\nWhat each service would have received for the tutorial job (examples/jobs/demo-notify-alice.json):")
        for platform in Platform.allCases {
            let lines = (try? String(contentsOf: outbox.appendingPathComponent("\(platform.rawValue).jsonl"), encoding: .utf8)) ?? ""
            for line in lines.split(separator: "\n") where line.contains("\"job\":\"demo-notify-alice\"") {
                if let v = try? JSONParser.parse(String(line)), let payload = v["payload"] {
                    print("  \(platform.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0)) \(v["device"]?.stringValue ?? "?"): \(payload.stringValue ?? payload.encodedString)")
                }
            }
        }
        print("""

            Result logs:  \(spool.url(.results).path)/<job-id>.jsonl
            Outbox:       \(outbox.path)/{apns,fcm,wns}.jsonl
            Done jobs:    \(spool.url(.done).path)/   Quarantined: \(spool.url(.failed).path)/
            Try:          swift run pushspool status --spool \(spool.root.path)
                          swift run pushspool devices --spool \(spool.root.path) --tags 'location_Boston && !follows_Cardinals'
            The demo has its own spool and registry; your real spool (./jobs by default) was not touched.
            """)
        let failedUnexpectedly = reports.contains {
            if case .interrupted = $0.outcome { return true }
            if case .failed = $0.outcome { return !$0.file.hasPrefix("demo-invalid") }
            return false
        }
        return failedUnexpectedly ? .software : .ok
    }

    /// The checkout's examples/: next to the working directory, or above the built binary.
    static func findExamples() -> URL? {
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(dir)
            dir = dir.deletingLastPathComponent()
        }
        return candidates.map { $0.appendingPathComponent("examples") }.first {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("jobs").path)
        }
    }

    /// Removes an earlier demo's spool, so the tour can be re-run without its jobs being reported
    /// as duplicates. Refuses a folder that holds anything but not a demo spool.
    static func startAfresh(_ root: URL) throws(CLIError) {
        let fm = FileManager.default
        let contents = (try? fm.contentsOfDirectory(atPath: root.path)) ?? []
        guard !contents.isEmpty else { return }
        guard fm.fileExists(atPath: root.appendingPathComponent(marker).path) else {
            throw CLIError(.usage, "demo: \(root.path) exists and is not a demo spool; give the demo an empty folder with --spool DIR")
        }
        do { try fm.removeItem(at: root) } catch {
            throw CLIError(.ioError, "demo: cannot clear the previous demo at \(root.path): \(error)")
        }
    }
}
