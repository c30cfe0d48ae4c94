import PushspoolKit
import Foundation
import PushspoolCore

/// `pushspool init`: the one command that creates a spool (the demo makes its own).
enum InitCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        let config = try Runtime.loadConfig(args)
        let existed = FileManager.default.fileExists(atPath: URL(fileURLWithPath: config.spool).appendingPathComponent("incoming").path)
        let runtime = try Runtime(args, createSpool: true)
        let registry = try runtime.openRegistry()
        let devices = (try? registry.count(platforms: Set(Platform.allCases), matching: nil)) ?? 0
        registry.close()
        if existed {
            print("spool \(runtime.spool.root.path) already exists (registry \(RegistryLocation.shown(runtime.config)), \(devices) devices); nothing changed")
        } else {
            print("""
                created spool \(runtime.spool.root.path)
                  drop jobs into    \(runtime.spool.url(.incoming).path)/ (write to tmp/, then rename)
                  registry          \(RegistryLocation.shown(runtime.config))
                  next: pushspool register …, pushspool submit …, pushspool run --once
                """)
        }
        return .ok
    }
}
