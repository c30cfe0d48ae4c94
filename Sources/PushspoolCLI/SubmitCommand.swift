import PushspoolKit
import Foundation
import PushspoolCore

enum SubmitCommand {
    /// `submit`: builds a job document from flags, validates it exactly as the dispatcher will,
    /// and writes it into the spool atomically.
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        var pairs: [(String, JSONValue)] = []
        let id = args.value("id") ?? JobIntake.newID()
        pairs.append(("id", .string(id)))
        let audiences = [args.value("to-tag") != nil, args.value("tags") != nil, args.has("broadcast")].filter { $0 }.count
        guard audiences == 1 else { throw CLIError(.usage, "submit: give exactly one of --to-tag, --tags, --broadcast") }
        if let t = args.value("to-tag") { pairs.append(("to_tag", .string(t))) }
        if let t = args.value("tags") { pairs.append(("tags", .string(t))) }
        if args.has("broadcast") { pairs.append(("broadcast", true)) }
        guard let pns = args.value("pns") else { throw CLIError(.usage, "submit: --pns is required (e.g. --pns apns,fcm,wns)") }
        let names = pns.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        // A mistyped option value is a usage error, as in `register --platform` and `devices --platform`.
        for name in names where Platform(name: name) == nil {
            throw CLIError(.usage, "submit: --pns: unknown platform \"\(name)\" (expected \(Platform.acceptedNames))")
        }
        pairs.append(("pns", .array(names.map(JSONValue.string))))
        guard let message = args.value("message") else { throw CLIError(.usage, "submit: --message is required") }
        pairs.append(("message", .string(message)))
        for (flag, field) in [("from", "from"), ("title", "title"), ("not-before", "not_before")] {
            if let v = args.value(flag) { pairs.append((field, .string(v))) }
        }
        let bytes = JSONValue.object(pairs).encoded()
        do {
            _ = try JobParser.parse(bytes, fileName: "\(id).json")
        } catch {
            throw CLIError(.dataError, "submit: \(error.description)")
        }
        let runtime = try Runtime(args, writing: [.tmp, .incoming])
        // A completed id is never sent again (the run would only report a duplicate): say so now,
        // while the one who asked is still here.
        let log = runtime.spool.resultURL(jobID: id)
        if !args.has("allow-duplicate"), let status = ResultLogTail.summary(log)?.status, status.isComplete {
            throw CLIError(.dataError, "submit: job \(id) already ran (\(status.rawValue)); its result log is \(log.path). "
                + "An id is sent once: give another --id, or --allow-duplicate to drop it anyway (the run reports it a duplicate and sends nothing)")
        }
        do {
            try runtime.spool.submit(bytes + [0x0A], name: "\(id).json")
        } catch {
            throw CLIError(.ioError, "submit: \(error.description)")
        }
        print("submitted \(id) → \(runtime.spool.url(.incoming, "\(id).json").path)")
        return .ok
    }

    /// `validate FILE...`: every problem of every file, one line each, prefixed with the file.
    static func validate(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard !args.positionals.isEmpty else { throw CLIError(.usage, "validate: give one or more job files") }
        var bad = 0, unreadable = 0
        for path in args.positionals {
            let url = URL(fileURLWithPath: path)
            let bytes: [UInt8]
            do { bytes = try FileIO.readAll(url) } catch {
                print("\(path): cannot read: \(error)")
                unreadable += 1
                continue
            }
            let job: Job
            do {
                job = try JobParser.parse(bytes, fileName: url.lastPathComponent)
            } catch {
                bad += 1
                for problem in error.problems { print("\(path): \(problem.description)") }
                continue
            }
            // The apps it names must be the config's (known only here, with the config).
            if case .send(let send) = job.kind, let config = try? Runtime.loadConfig(args),
               case .failure(let problem) = send.apps.resolve(known: Set(config.apps.keys), defaultApp: config.defaultApp) {
                bad += 1
                print("\(path): \(problem.description)")
                continue
            }
            print("\(path): ok (id \(job.id))")
            if args.has("resolve"), case .send(let send) = job.kind { try resolve(send, path: path, args: args) }
        }
        return bad > 0 ? .dataError : unreadable > 0 ? .ioError : .ok
    }

    /// The dry run (`SendPreview`, which the dashboard's compose page shows too): who a send job
    /// would reach (per platform, from the registry; a hub-routed platform's tags are resolved by
    /// the hub, so the local registry's count is an estimate) and exactly what each platform
    /// would receive, in each language. Sends nothing.
    static func resolve(_ send: SendJob, path: String, args: Arguments) throws(CLIError) {
        let runtime = try Runtime(args)
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let config = runtime.config
        let preview: SendPreview
        do { preview = try SendPreview.make(send, config: config, registry: registry) } catch {
            throw CLIError(.ioError, "validate: registry: \(RegistryError.detail(error))")
        }
        for platform in send.platforms {
            for reach in preview.reach where reach.platform == platform {
                let which = config.appsSection == nil ? "" : "app \(reach.app): "
                print("\(path): \(which)\(platform.rawValue) via \(reach.route): \(TerminalText.escaped(reach.summary))")
            }
            // A WNS body is XML and an APNs one raw UTF-8: the message's own bidi and control
            // characters are shown escaped.
            for payload in preview.payloads where payload.platform == platform {
                print("\(path):   \(payload.language.map { "[\($0.value)] " } ?? "")\(TerminalText.escaped(payload.body))")
            }
        }
    }
}
