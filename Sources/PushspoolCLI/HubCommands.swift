import PushspoolKit
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeping a hub's installations in step with the local registry from the command line:
/// `register`/`unregister`/`import` write through to it when a platform routes to a hub, and
/// `hub sync` pushes every local registration of hub-routed platforms (migration, repair).
struct HubLink {
    let writer: InstallationWriter
    private let apps: AppRoutes

    /// Whether any app routes a platform to a hub (then the hub's credentials are needed).
    static func isHubRouted(_ config: Config) -> Bool { EngineSetup.isHubRouted(config) }

    /// The link for this config, or nil when no platform of any app routes to a hub (nothing to
    /// keep in step): the hub's providers and the worker pool as the engine assembles them
    /// (`EngineSetup.hubWriter`). `isStopping`: asked before each retry (`serve`'s queue stops
    /// retrying when it stops). `registry`: the one the process holds open (`serve`), whose
    /// connections the hub's shared credentials borrow.
    static func open(_ config: Config, spool: Spool, registry: (any DeviceRegistry)? = nil,
                     isStopping: @escaping @Sendable () -> Bool = { false }) throws(CLIError) -> HubLink? {
        let parts: (writer: InstallationWriter, apps: AppRoutes)?
        do {
            parts = try EngineSetup.hubWriter(config: config, spool: spool, log: Log.shared, registry: registry, isStopping: isStopping)
        } catch {
            throw CLIError(error)
        }
        return parts.map { HubLink(writer: $0.writer, apps: $0.apps) }
    }

    func close() { apps.shutdown() }

    /// The line for a hub write that did not take.
    static func report(_ outcome: InstallationWriter.Outcome, command: String) {
        FileHandle.standardError.write(Data("pushspool: \(command): \(outcome.summary); the local registry has the change — run `pushspool hub sync` once the hub answers\n".utf8))
    }

    struct Counts: Sendable {
        var written = 0, failed = 0
        var byPlatform: [Platform: Int] = [:]
        var firstFailures: [String] = []
    }

    /// Pushes every local registration of the hub-routed platforms (those updated at or after
    /// `since`, when given) with at most `concurrency` writes in flight, streaming the registry in
    /// bounded memory. Progress on a terminal; the counts at the end.
    /// `apps`: these apps' devices only (nil: every hub-routed app's).
    func push(from registry: any DeviceRegistry, since: Date? = nil, apps only: [String]? = nil, concurrency: Int = 32,
              label: String) throws -> Counts {
        let apps = only ?? writer.apps
        let platforms = apps.reduce(into: Set<Platform>()) { $0.formUnion(writer.platforms(app: $1)) }
        let total = since == nil ? ((try? registry.count(platforms: platforms, apps: Set(apps), matching: nil)) ?? 0) : nil
        let counts = Mutex(Counts())
        let slots = DispatchSemaphore(value: concurrency)
        let group = DispatchGroup()
        let progress = ProgressLine(label: label, total: total)
        try registry.forEach(platforms: platforms, apps: Set(apps), matching: nil) { device in
            if let since, device.updatedAt < since { return true }
            guard writer.serves(device.platform, app: device.app) else { return true }
            slots.wait()
            group.enter()
            writer.write(.put(device), platform: device.platform) { outcome in
                let done = counts.withLock { c in
                    if outcome.ok {
                        c.written += 1
                        c.byPlatform[device.platform, default: 0] += 1
                    } else {
                        c.failed += 1
                        if c.firstFailures.count < 5 { c.firstFailures.append(outcome.summary) }
                    }
                    return c.written + c.failed
                }
                progress.update(done)
                slots.signal()
                group.leave()
            }
            return true
        }
        group.wait()
        progress.finish()
        return counts.withLock { $0 }
    }
}

/// One updating line on stderr while a long command works, only when stderr is a terminal:
/// done (of total, when known), the rate so far and, with a total, the time left.
final class ProgressLine: Sendable {
    private let label: String
    private let total: Int?
    private let board = TerminalBoard.shared
    private let started = Date()
    private let lastDrawn = Mutex(Date.distantPast)

    init(label: String, total: Int?) {
        self.label = label
        self.total = total
    }

    func update(_ done: Int) {
        guard board.enabled else { return }
        let now = Date()
        let due = lastDrawn.withLock { last in
            guard now.timeIntervalSince(last) >= 0.2 else { return false }
            last = now
            return true
        }
        guard due else { return }
        // The terminal's live-lines board: log lines print above it instead of through it.
        board.draw([Self.text(label: label, done: done, total: total, elapsed: now.timeIntervalSince(started))])
    }

    func finish() { board.clear() }

    static func text(label: String, done: Int, total: Int?, elapsed: Double) -> String {
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        var line = "\(label): \(done)"
        if let total, total > 0 {
            line += " / \(total) (\(done * 100 / total)%)"
        }
        line += ", \(Int(rate.rounded()))/s"
        if let total, rate > 0, done < total {
            line += ", \(Int((Double(total - done) / rate).rounded(.up))) s left"
        }
        return line
    }
}

enum HubCommands {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals == ["sync"] else { throw CLIError(.usage, "hub: the only subcommand is `hub sync`") }
        let runtime = try Runtime(args, requireSecrets: true)
        guard let link = try HubLink.open(runtime.config, spool: runtime.spool) else {
            throw CLIError(.config, "hub sync: no platform routes to azure in \(args.value("config") ?? "the configuration"); nothing to sync")
        }
        defer { link.close() }
        // `--app A`: that app's hub only; without it every hub-routed app's.
        var only: [String]?
        if let app = args.value("app") {
            if let why = RegistryDefaults(runtime.config).appProblem(app) { throw CLIError(.usage, "hub sync: --app: \(why)") }
            guard link.writer.apps.contains(app) else {
                throw CLIError(.config, "hub sync: --app: app \(app) routes no platform to a hub; nothing to sync")
            }
            only = [app]
        }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let counts: HubLink.Counts
        do {
            counts = try link.push(from: registry, apps: only, label: "hub sync")
        } catch {
            throw CLIError(.ioError, "hub sync: reading the registry failed: \(RegistryError.detail(error))")
        }
        for failure in counts.firstFailures { FileHandle.standardError.write(Data("pushspool: hub sync: \(failure)\n".utf8)) }
        print(HubCommands.report("hub sync", counts))
        return counts.failed == 0 ? .ok : .ioError
    }

    /// `hub sync: 10000 installations written (apns 3334, fcm 3333, wns 3333), 0 failed`.
    static func report(_ label: String, _ counts: HubLink.Counts) -> String {
        let per = counts.byPlatform.keys.sorted().map { "\($0.rawValue) \(counts.byPlatform[$0] ?? 0)" }
        let detail = per.isEmpty ? "" : " (\(per.joined(separator: ", ")))"
        return "\(label): \(counts.written) installations written\(detail), \(counts.failed) failed"
    }
}
