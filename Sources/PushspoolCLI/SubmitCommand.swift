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

    /// The dry run: who a send job would reach (per platform, from the registry; a hub-routed
    /// platform's tags are resolved by the hub, so the local registry's count is an estimate) and
    /// exactly what each platform would receive, in each language. Sends nothing.
    static func resolve(_ send: SendJob, path: String, args: Arguments) throws(CLIError) {
        let runtime = try Runtime(args)
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let config = runtime.config
        let apps = (try? send.apps.resolve(known: Set(config.apps.keys), defaultApp: config.defaultApp).get()) ?? []
        for platform in send.platforms {
            // Per app (and for APNs per environment) once the config has apps.
            for app in apps {
                let route = config.apps[app]?.routes[platform] ?? "sandbox"
                let who: String
                if case .apnsChannel(let id) = send.audience {
                    let known: Bool
                    do { known = try registry.channel(app: app, id: id) != nil } catch {
                        throw CLIError(.ioError, "validate: registry: \(RegistryError.detail(error))")
                    }
                    who = "APNs fans the broadcast channel \(id) out (one request)"
                        + (known ? "" : "; the registry has no such channel for this app: the job would fail")
                } else if let (field, value) = send.audience.serviceTarget {
                    who = "FCM resolves the \(field) \(value) (one request)"
                } else {
                    let count: Int, environments: String
                    do {
                        count = try registry.count(platforms: [platform], apps: [app], tokenKind: send.message.native.tokenKind,
                                                   matching: send.audience.tagExpression)
                        environments = platform == .apns && config.appsSection != nil
                            ? try environmentCounts(registry, app: app, send: send) : ""
                    } catch {
                        throw CLIError(.ioError, "validate: registry: \(RegistryError.detail(error))")
                    }
                    who = config.providerKind(route) == .azure
                        ? "the hub resolves \(send.audience.hubTags ?? "everyone") (\(count) such devices in the local registry)"
                        : "\(count) devices\(environments)"
                }
                let which = config.appsSection == nil ? "" : "app \(app): "
                print("\(path): \(which)\(platform.rawValue) via \(route): \(TerminalText.escaped(who))")
            }
            // A secure push carries no text: one shape for every language, and no text shown here.
            for language in [nil] + (send.secure ? [] : send.localized.keys.sorted()) {
                let text = language.map { send.message(in: $0) } ?? send.message
                let payload: String
                do {
                    payload = preview(try PayloadRenderer.render(text, for: platform, tracking: send.tracking))
                } catch {
                    payload = "cannot render: \(error.description)"
                }
                // A WNS body is XML and an APNs one raw UTF-8: the message's own bidi and control
                // characters are shown escaped.
                print("\(path):   \(language.map { "[\($0.value)] " } ?? "")\(TerminalText.escaped(payload))")
            }
        }
    }

    /// ` (production 2, development 1)`: an app's APNs audience by environment.
    static func environmentCounts(_ registry: any DeviceRegistry, app: String, send: SendJob) throws -> String {
        var counts: [APNsEnvironment: Int] = [:]
        try registry.forEach(platforms: [.apns], apps: [app], tokenKind: send.message.native.tokenKind, matching: send.audience.tagExpression) { device in
            counts[device.environment ?? .production, default: 0] += 1
            return true
        }
        return " (" + APNsEnvironment.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ") + ")"
    }

    /// A rendered notification as its service would receive the body.
    static func preview(_ n: RenderedNotification) -> String {
        switch n {
        case .apns(let a): return String(decoding: a.payload, as: UTF8.self)
        case .fcm(let f): return JSONValue.object([("message", f.message)]).encodedString
        case .wns(let w): return String(decoding: w.body, as: UTF8.self)
        case .web(let w): return String(decoding: w.payload, as: UTF8.self)
        }
    }
}
