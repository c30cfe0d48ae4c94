import Foundation
import PushspoolCore

/// `pushspool demo`: the zero-credential tour on the default spool. Every platform is routed to
/// the sandbox whatever `pushspool.json` says, so the demo can never reach a real service.
enum DemoCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard let examples = findExamples() else {
            throw CLIError(.ioError, "demo: cannot find the examples/ folder; run the demo from the pushspool checkout")
        }
        let runtime = try Runtime(args, builtIn: true)
        let spool = runtime.spool
        resetPreviousDemo(spool)

        let registry = try runtime.openRegistry()
        let devices: Int
        do {
            devices = try registry.importJSONL(contentsOf: examples.appendingPathComponent("devices.jsonl"))
        } catch {
            throw CLIError(.dataError, "demo: examples/devices.jsonl: \(error)")
        }
        registry.close()
        print("Seeded the registry \(runtime.config.registryPath) with \(devices) sample devices from examples/devices.jsonl.")

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

        let reports = try RunCommand.dispatch(runtime, once: true) { print("  \($0)") }

        let outbox = URL(fileURLWithPath: runtime.config.sandbox.outbox ?? spool.url(.outbox).path)
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
            Try:          swift run pushspool status    ·    swift run pushspool devices --tags 'location_Boston && !follows_Cardinals'
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

    /// Removes only what an earlier demo left (files named `demo-*`), so the tour can be re-run
    /// without its jobs being reported as duplicates. Nothing else in the spool is touched.
    static func resetPreviousDemo(_ spool: Spool) {
        let fm = FileManager.default
        for folder in [Spool.Folder.incoming, .done, .failed, .results] {
            for name in (try? fm.contentsOfDirectory(atPath: spool.url(folder).path)) ?? [] where name.hasPrefix("demo-") {
                try? fm.removeItem(at: spool.url(folder, name))
            }
        }
    }
}
