import Foundation
import PushspoolCore

enum RegistryCommands {
    static func register(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard let name = args.value("platform") else {
            throw CLIError(.usage, "register: --platform is required (\(Platform.acceptedNames))")
        }
        guard let platform = Platform(name: name) else {
            throw CLIError(.usage, "register: --platform: unknown platform \"\(name)\" (expected \(Platform.acceptedNames))")
        }
        guard let given = args.value("handle"), !given.isEmpty else { throw CLIError(.usage, "register: --handle is required") }
        if let problem = platform.handleProblem(given) { throw CLIError(.dataError, "register: --handle: \(problem)") }
        let handle = platform.canonicalHandle(given)
        for tag in args.values("tag") where !TagExpression.isValidTag(Substring(tag)) {
            throw CLIError(.dataError, "register: --tag \"\(tag)\" is not a valid tag ([A-Za-z0-9_@#.:-], 1–120 characters)")
        }
        var lang: LanguageTag?
        if let text = args.value("lang") {
            guard let tag = LanguageTag(text) else { throw CLIError(.dataError, "register: --lang \"\(text)\" is not \(LanguageTag.rule)") }
            lang = tag
        }
        let (runtime, hub) = try openForChange(args)
        defer { hub?.close() }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let device: Device, movedFrom: String?
        do {
            (device, movedFrom) = try registry.upsertReportingMove(Registration(id: args.value("id"), platform: platform, handle: handle,
                                                                                tags: args.values("tag"), lang: lang))
            print("registered \(device.id) (\(device.platform.rawValue); tags: \(device.tags.joined(separator: " "))\(device.lang.map { "; lang \($0)" } ?? ""))")
        } catch {
            throw CLIError(.dataError, "register: \(error)")
        }
        guard let hub else { return .ok }
        let moved = movedFrom.map { hub.write(.delete(id: $0), platform: platform, command: "register") } ?? true
        return moved && hub.write(.put(device), platform: platform, command: "register") ? .ok : .ioError
    }

    /// The runtime for a registry change, with the hub link when a platform routes to a hub
    /// (then the hub's credentials must resolve).
    private static func openForChange(_ args: Arguments) throws(CLIError) -> (Runtime, HubLink?) {
        let hubRouted = (try? Runtime.loadConfig(args))?.routes.values.contains("azure") ?? false
        let runtime = try Runtime(args, requireSecrets: hubRouted)
        return (runtime, try HubLink.open(runtime.config, spool: runtime.spool))
    }

    static func unregister(_ args: Arguments) throws(CLIError) -> ExitCode {
        let id = args.value("id")
        // A web handle is found by its canonical form, however the subscription JSON is spaced.
        let handle = args.value("handle").map { h in h.hasPrefix("{") ? Platform.web.canonicalHandle(h) : h }
        guard (id == nil) != (handle == nil) else { throw CLIError(.usage, "unregister: give exactly one of --id, --handle") }
        let (runtime, hub) = try openForChange(args)
        defer { hub?.close() }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let device: Device?
        do {
            device = try id.map { try registry.device(id: $0) } ?? registry.device(handle: handle!)
            let removed = try id.map { try registry.remove(id: $0) } ?? registry.remove(handle: handle!)
            guard removed, let device else {
                FileHandle.standardError.write(Data("pushspool: unregister: no such device \(id.map { "--id \($0)" } ?? "with that --handle")\n".utf8))
                return .dataError
            }
            print("unregistered \(device.id) (\(device.platform.rawValue))")
        } catch {
            throw CLIError(.ioError, "unregister: \(error)")
        }
        guard let hub, let device else { return .ok }
        return hub.write(.delete(id: device.id), platform: device.platform, command: "unregister") ? .ok : .ioError
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
        let registry = try Runtime(args).openRegistry()
        defer { registry.close() }
        do {
            if args.has("count") {
                print(try registry.count(platforms: platforms, matching: expression))
                return .ok
            }
            try registry.forEach(platforms: platforms, matching: expression) { d in
                // Handles are left out: they are delivery credentials of a sort.
                // A web subscription shows its push service's origin only (its keys and path are the credential).
                let endpoint: [(String, JSONValue)] = d.platform == .web
                    ? [("endpoint", .string(((try? WebPushSubscription.parse(text: d.handle))?.origin ?? "") + "…"))] : []
                print(JSONValue.object([("id", .string(d.id)), ("platform", .string(d.platform.rawValue))] + endpoint + [
                                        ("tags", .array(d.tags.map(JSONValue.string)))] + (d.lang.map { [("lang", .string($0.value))] } ?? []) + [
                                        ("updated_at", .string(Timestamp.rfc3339(d.updatedAt)))]).encodedString)
                return true
            }
        } catch {
            throw CLIError(.ioError, "devices: \(error)")
        }
        return .ok
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
        print("imported \(report.imported) devices" + (report.refusedCount > 0 ? ", refused \(report.refusedCount) lines" : ""))
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
            throw CLIError(.ioError, "import: reading the registry back for the hub failed: \(error)")
        }
    }
}
