import PushspoolKit
import Foundation
import PushspoolCore

enum RegistryCommands {
    /// The flags as `RegistrationRules` names them in messages.
    static let flagNames: RegistrationRules.FieldNames = {
        var names = RegistrationRules.FieldNames(id: "--id", platform: "--platform", handle: "--handle", tags: "--tag", lang: "--lang")
        (names.app, names.environment, names.tokenKind, names.tz) = ("--app", "--environment", "--token-kind", "--tz")
        return names
    }()

    static func register(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard let name = args.value("platform") else {
            throw CLIError(.usage, "register: --platform is required (\(Platform.acceptedNames))")
        }
        guard Platform(name: name) != nil else {
            throw CLIError(.usage, "register: --platform: unknown platform \"\(name)\" (expected \(Platform.acceptedNames))")
        }
        guard let given = args.value("handle"), !given.isEmpty else { throw CLIError(.usage, "register: --handle is required") }
        let checked = RegistrationRules.registration(id: args.value("id").map(JSONValue.string), platform: .string(name), handle: .string(given),
                                                     tags: .array(args.values("tag").map(JSONValue.string)),
                                                     lang: args.value("lang").map(JSONValue.string),
                                                     app: args.value("app").map(JSONValue.string),
                                                     environment: args.value("environment").map(JSONValue.string),
                                                     tokenKind: args.value("token-kind").map(JSONValue.string), tz: args.value("tz").map(JSONValue.string), names: flagNames)
        let registration: Registration
        switch checked {
        case .success(let r): registration = r
        case .failure(let refused): throw CLIError(.dataError, "register: " + flagProblems(refused))
        }
        let (runtime, hub) = try openForChange(args)
        defer { hub?.close() }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        if let app = registration.app, let why = RegistryDefaults(runtime.config).appProblem(app) {
            throw CLIError(.dataError, "register: --app: \(why)")
        }
        let change: RegistrationChange
        do {
            change = try RegistrationService(registry: registry, hub: hub?.writer).register(registration, now: Date())
        } catch {
            throw CLIError(.dataError, "register: \(error)")
        }
        let device = change.device
        let app = runtime.config.appsSection == nil ? "" : "; app \(device.app)"
        let env = runtime.config.appsSection == nil ? "" : device.environment.map { "; \($0.rawValue)" } ?? ""
        let kind = device.tokenKind == .device ? "" : "; \(device.tokenKind.rawValue) token"
        print("registered \(device.id) (\(device.platform.rawValue)\(app)\(env)\(kind); tags: \(device.tags.joined(separator: " "))\(device.lang.map { "; lang \($0)" } ?? "")\(device.tz.map { "; tz \($0)" } ?? ""))")
        for outcome in change.hub where !outcome.ok { HubLink.report(outcome, command: "register") }
        return change.hubFailed ? .ioError : .ok
    }

    /// Problems with flags, one sentence each, named by the flag: `--tag[1]: …` reads as
    /// `--tag: …` (flags are not numbered on the command line) and `--handle.keys.auth: …` as
    /// `--handle: keys.auth: …` (a part of the subscription JSON given to `--handle`).
    private static func flagProblems(_ refused: RegistrationProblems) -> String {
        refused.problems.map { p in
            if p.field.hasPrefix("--tag[") { return "--tag: \(p.message)" }
            if p.field.hasPrefix("--handle.") { return "--handle: \(p.field.dropFirst("--handle.".count)): \(p.message)" }
            return p.field.isEmpty ? p.message : "\(p.field): \(p.message)"
        }.joined(separator: "; ")
    }

    /// The runtime for a registry change, with the hub link when a platform routes to a hub
    /// (then the hub's credentials must resolve).
    private static func openForChange(_ args: Arguments) throws(CLIError) -> (Runtime, HubLink?) {
        let runtime = try Runtime(args, requireSecretsIf: HubLink.isHubRouted)
        return (runtime, try HubLink.open(runtime.config, spool: runtime.spool))
    }

    static func unregister(_ args: Arguments) throws(CLIError) -> ExitCode {
        let id = args.value("id"), handle = args.value("handle")
        guard (id == nil) != (handle == nil) else { throw CLIError(.usage, "unregister: give exactly one of --id, --handle") }
        // A web handle is found by its canonical form, however the subscription JSON is spaced.
        var which: Unregistration
        switch RegistrationRules.unregistration(id: id.map(JSONValue.string), handle: handle.map(JSONValue.string), names: flagNames) {
        case .success(let w): which = w
        case .failure(let refused): throw CLIError(.dataError, "unregister: " + flagProblems(refused))
        }
        if let app = args.value("app") {
            guard case .handle(let h, _) = which else { throw CLIError(.usage, "unregister: --app goes with --handle (an id names one device)") }
            which = .handle(h, app: app)
        }
        let (runtime, hub) = try openForChange(args)
        defer { hub?.close() }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let change: RegistrationChange?
        do {
            change = try RegistrationService(registry: registry, hub: hub?.writer).unregister(which, now: Date())
        } catch {
            throw CLIError(.ioError, "unregister: \(error)")
        }
        guard let change else {
            FileHandle.standardError.write(Data("pushspool: unregister: no such device \(id.map { "--id \($0)" } ?? "with that --handle")\n".utf8))
            return .dataError
        }
        print("unregistered \(change.device.id) (\(change.device.platform.rawValue))")
        for outcome in change.hub where !outcome.ok { HubLink.report(outcome, command: "unregister") }
        return change.hubFailed ? .ioError : .ok
    }

    static func devices(_ args: Arguments) throws(CLIError) -> ExitCode {
        var expression: TagExpression?
        if let text = args.value("tags") {
            do { expression = try TagExpression.parse(text) } catch {
                throw CLIError(.usage, "devices: --tags: \(error.description)")
            }
        }
        var platforms = Set(Platform.allCases)
        if !args.values("platform").isEmpty {
            platforms = []
            for name in args.values("platform") {
                guard let p = Platform(name: name) else { throw CLIError(.usage, "devices: --platform: unknown platform \"\(name)\" (expected \(Platform.acceptedNames))") }
                platforms.insert(p)
            }
        }
        let runtime = try Runtime(args)
        let apps = args.values("app").isEmpty ? nil : Set(args.values("app"))
        for app in apps ?? [] {
            if let why = RegistryDefaults(runtime.config).appProblem(app) { throw CLIError(.usage, "devices: --app: \(why)") }
        }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let severalApps = runtime.config.appsSection != nil
        if let by = args.value("by") {
            guard by == "tz" else { throw CLIError(.usage, "devices: --by: unknown grouping \"\(by)\" (expected tz)") }
            guard !args.has("count") else { throw CLIError(.usage, "devices: --by: not together with --count") }
            do {
                try printZoneCounts(registry.zoneCounts(platforms: platforms, apps: apps, tokenKind: nil, matching: expression), config: runtime.config)
            } catch {
                throw CLIError(.ioError, "devices: \(error)")
            }
            return .ok
        }
        do {
            if args.has("count") {
                print(try registry.count(platforms: platforms, apps: apps, matching: expression))
                return .ok
            }
            try registry.forEach(platforms: platforms, apps: apps, matching: expression) { d in
                // Handles are left out: they are delivery credentials of a sort.
                // A web subscription shows its push service's origin only (its keys and path are the credential).
                // Written straight to bytes: a million devices to a file in a second or two.
                var line = JSONLineWriter(capacity: 192)
                line.field("id", d.id)
                line.field("platform", d.platform.rawValue)
                // Shown once a config has apps (a single-app listing stays as it was).
                if severalApps || d.app != AppConfig.implicitID { line.field("app", d.app) }
                if severalApps, let env = d.environment { line.field("environment", env.rawValue) }
                if d.tokenKind != .device { line.field("token_kind", d.tokenKind.rawValue) }
                if d.platform == .web {
                    line.field("endpoint", ((try? WebPushSubscription.parse(text: d.handle))?.origin ?? "") + "…")
                }
                line.field("tags", strings: d.tags)
                if let lang = d.lang { line.field("lang", lang.value) }
                if let tz = d.tz { line.field("tz", tz) }
                line.field("updated_at", Timestamp.rfc3339(d.updatedAt))
                StandardOutput.shared.write(bytes: line.line())
                return true
            }
        } catch {
            throw CLIError(.ioError, "devices: \(error)")
        }
        return .ok
    }

    /// `devices --by tz`: `{"tz": ZONE, "devices": N}` per zone, largest first; a device with no
    /// `tz` counts in the zone its job would use (its app's `default_tz`, else UTC).
    static func printZoneCounts(_ counts: [ZoneCount], config: Config) {
        var perZone: [String: Int] = [:]
        for c in counts { perZone[config.apps[c.app]?.zone(of: c.tz) ?? c.tz ?? "UTC", default: 0] += c.devices }
        for (zone, n) in perZone.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
            var line = JSONLineWriter(capacity: 64)
            line.field("tz", zone)
            line.field("devices", n)
            StandardOutput.shared.write(bytes: line.line())
        }
    }

    static func importFile(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals.count == 1 else { throw CLIError(.usage, "import: give one FILE.jsonl") }
        let (runtime, hub) = try openForChange(args)
        defer { hub?.close() }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        // Whole seconds, as stored: the hub push below selects this import's rows by it.
        let started = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let file = args.positionals[0]
        let report: RegistryImportReport
        do {
            let line = ProgressLine(label: "import: reading \(file)", total: nil)
            defer { line.finish() }
            report = try registry.importJSONL(contentsOf: URL(fileURLWithPath: file), now: started) { line.update($0) }
        } catch {
            throw CLIError(.ioError, "import: \(file): \(error)")
        }
        // A handle that changed installation is a device that changed hands: say so, by name.
        let moved = report.moved == 0 ? "" : ", moved \(report.moved) handle\(report.moved == 1 ? "" : "s") to another id ("
            + report.firstMoves.joined(separator: ", ") + (report.moved > report.firstMoves.count ? ", …" : "") + ")"
        print("imported \(report.imported) devices" + moved + (report.refusedCount > 0 ? ", refused \(report.refusedCount) lines" : ""))
        // Every refused line on stderr with its number and field, then the rest of the import
        // goes on (the hub still gets what was imported); the exit code says some lines were bad.
        for problem in report.refused { FileHandle.standardError.write(Data("pushspool: import: \(file): \(problem)\n".utf8)) }
        if report.refusedCount > report.refused.count {
            FileHandle.standardError.write(Data("pushspool: import: \(file): … and \(report.refusedCount - report.refused.count) more lines refused\n".utf8))
        }
        let linesOK: ExitCode = report.refusedCount > 0 ? .dataError : .ok
        guard let hub else { return linesOK }
        do {
            let counts = try hub.push(from: registry, since: started, label: "import: writing to the hub")
            for failure in counts.firstFailures { FileHandle.standardError.write(Data("pushspool: import: \(failure)\n".utf8)) }
            print(HubCommands.report("import", counts))
            if counts.failed > 0 {
                FileHandle.standardError.write(Data("pushspool: import: \(counts.failed) installations did not reach the hub; the local registry has them — run `pushspool hub sync` once the hub answers\n".utf8))
                return .ioError
            }
            return linesOK
        } catch {
            throw CLIError(.ioError, "import: reading the registry back for the hub failed: \(RegistryError.detail(error))")
        }
    }
}
