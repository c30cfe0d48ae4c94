import Foundation
import PushspoolCore

enum RegistryCommands {
    static func register(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard let name = args.value("platform"), let platform = Platform(name: name) else {
            throw CLIError(.usage, "register: --platform must be one of \(Platform.acceptedNames)")
        }
        guard let handle = args.value("handle"), !handle.isEmpty else { throw CLIError(.usage, "register: --handle is required") }
        for tag in args.values("tag") where !TagExpression.isValidTag(Substring(tag)) {
            throw CLIError(.dataError, "register: --tag \"\(tag)\" is not a valid tag ([A-Za-z0-9_@#.:-], 1–120 characters)")
        }
        var lang: LanguageTag?
        if let text = args.value("lang") {
            guard let tag = LanguageTag(text) else { throw CLIError(.dataError, "register: --lang \"\(text)\" is not \(LanguageTag.rule)") }
            lang = tag
        }
        let registry = try Runtime(args).openRegistry()
        defer { registry.close() }
        do {
            let device = try registry.upsert(Registration(id: args.value("id"), platform: platform, handle: handle,
                                                          tags: args.values("tag"), lang: lang))
            print("registered \(device.id) (\(device.platform.rawValue); tags: \(device.tags.joined(separator: " ")))")
        } catch {
            throw CLIError(.dataError, "register: \(error)")
        }
        return .ok
    }

    static func unregister(_ args: Arguments) throws(CLIError) -> ExitCode {
        let id = args.value("id"), handle = args.value("handle")
        guard (id == nil) != (handle == nil) else { throw CLIError(.usage, "unregister: give exactly one of --id, --handle") }
        let registry = try Runtime(args).openRegistry()
        defer { registry.close() }
        do {
            let removed = try id.map { try registry.remove(id: $0) } ?? registry.remove(handle: handle!)
            print(removed ? "unregistered \(id ?? "device")" : "no such device")
            return removed ? .ok : .dataError
        } catch {
            throw CLIError(.ioError, "unregister: \(error)")
        }
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
                guard let p = Platform(name: name) else { throw CLIError(.usage, "devices: unknown platform \"\(name)\"") }
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
                print(JSONValue.object([("id", .string(d.id)), ("platform", .string(d.platform.rawValue)),
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
        let registry = try Runtime(args).openRegistry()
        defer { registry.close() }
        do {
            let n = try registry.importJSONL(contentsOf: URL(fileURLWithPath: args.positionals[0]))
            print("imported \(n) devices")
            return .ok
        } catch {
            throw CLIError(.dataError, "import: \(args.positionals[0]): \(error)")
        }
    }
}
