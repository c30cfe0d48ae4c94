import PushspoolKit
import Foundation
import PushspoolCore

enum StatusCommand {
    /// `status`: what is queued where and for how long, what is running and how far it got,
    /// which providers were paused, and the latest failures.
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        let runtime = try Runtime(args, createSpool: false)
        if let id = args.positionals.first { return try job(id, runtime: runtime, json: args.has("json")) }
        let spool = runtime.spool
        let controls = JobControls(directory: spool.url(.control))
        let now = Date()
        var folders: [(String, JSONValue)] = []
        var recentlyFailed: [String] = []
        let dispatchers = DispatcherPresence.running(on: spool, now: now)
        let providers = DispatcherPresence.providers(of: dispatchers)
        // A responding dispatcher's last listing of incoming/ is taken, not made again (`IncomingTally`).
        let tally = IncomingTally.current(spool, dispatchers: dispatchers)
        // Every folder's count shares one budget, so status answers within half a second whatever
        // the spool holds: a folder that does not fit (a million names take over a second to list,
        // whoever lists them) shows the count reached as a lower bound.
        let deadline = Date().addingTimeInterval(Self.countBudget)
        for folder in [Spool.Folder.incoming, .active, .done, .failed] {
            if folder == .incoming, let tally {
                folders.append((folder.rawValue, tally.json(now: now)))
                continue
            }
            // Counted and dated in one pass, names not kept: a flood answers as fast as it is listed.
            // Beyond `datedSample` jobs only that many are dated (the age is then a lower bound):
            // status answers within half a second even with a million files waiting.
            let budget = max(0.02, deadline.timeIntervalSinceNow)
            let scan = FolderScan(spool.url(folder).path, limit: folder == .failed ? 5 : 0, datedLimit: Self.datedSample, newest: true, budget: budget)
            if folder == .failed { recentlyFailed = scan?.oldest.map(\.name) ?? [] }
            var fields: [(String, JSONValue)] = [
                ("count", .int(Int64(scan?.jobs ?? 0))),
                ("oldest_age_s", scan?.oldestModified.map { .int(Int64(now.timeIntervalSince1970 - $0)) } ?? .null),
            ]
            if let scan, scan.dated < scan.jobs || !scan.complete { fields.append(("oldest_age_sampled", .bool(true))) }
            if folder == .incoming { fields.append(("not_jobs", .int(Int64(scan?.strays ?? 0)))) }
            if let scan, !scan.complete { fields.append(("count_is_lower_bound", .bool(true))) }
            folders.append((folder.rawValue, .object(fields)))
        }
        let status = JobStatus(spool: spool, defaultApp: runtime.config.defaultApp)
        let active = spool.jobs(in: .active).map { status.active(name: $0, now: now) }
        let registryProblem = RegistryProbe(config: runtime.config).problem()
        let queue = Self.sharedQueue(runtime.config, registryProblem: registryProblem)
        var failures: [JSONValue] = []
        for name in recentlyFailed {
            failures.append(.object([("file", .string(name)), ("error", failureReason(spool, name).map(JSONValue.string) ?? .null)]))
        }
        let hooks = WebhookJournal.counts(spoolRoot: spool.root)
        let showHooks = !runtime.config.webhooks.isEmpty || hooks.pending + hooks.failed > 0
        var doc = JSONValue.object([
            ("spool", .string(spool.root.path)),
            // The least responsive dispatcher (null: none runs), then every one.
            ("dispatcher", dispatchers.first?.json() ?? .null),
            ("dispatchers", .array(dispatchers.map { $0.json() })),
            ("registry", RegistryProbe.json(registryProblem)),
            ("folders", .object(folders)),
            ("active", .array(active)),
            // Each provider's connections, requests in flight and recent failed answers, as the
            // responding dispatchers reported them at their last heartbeat.
            ("providers", .array(providers.map { $0.json() })),
            ("paused_providers", .array(PauseRecord.all(in: spool))),
            ("rate_limits", .object(runtime.config.maxPerSecond.sorted { $0.key < $1.key }.map { ($0.key, .double($0.value)) })),
            ("requests", .object(ControlRequest.allCases.map { ($0.rawValue, .array(controls.ids($0).sorted().map(JSONValue.string))) })),
            ("recent_failures", .array(failures)),
        ])
        if showHooks, case .object(var pairs) = doc {
            pairs.append(("webhooks", .object([("pending", .int(Int64(hooks.pending))), ("failed", .int(Int64(hooks.failed)))])))
            doc = .object(pairs)
        }
        if let queue, case .object(var pairs) = doc {
            pairs.append(("queue", queue))
            doc = .object(pairs)
        }
        if args.has("json") {
            print(doc.encodedString)
            return .ok
        }
        print("spool \(spool.root.path)")
        for (name, v) in folders {
            let count = v["count"].flatMap { if case .int(let n) = $0 { return Int(n) } else { return nil } } ?? 0
            let atLeast = v["oldest_age_sampled"] == .bool(true) ? "≥ " : ""
            let age = v["oldest_age_s"].flatMap { if case .int(let n) = $0 { return " (oldest \(atLeast)\(formatAge(Int(n))))" } else { return nil } } ?? ""
            let strays = v["not_jobs"].flatMap { if case .int(let n) = $0, n > 0 { return n == 1 ? ", 1 file that is not a job" : ", \(n) files that are not jobs" } else { return nil } } ?? ""
            let atLeastCount = v["count_is_lower_bound"] == .bool(true) ? "≥ " : ""
            print("  \(name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(atLeastCount)\(count)\(age)\(strays)")
        }
        if dispatchers.isEmpty { print("  no dispatcher running") }
        for d in dispatchers { print("  \(d.line)") }
        print("  registry: " + (registryProblem.map { "unreachable (\($0))" } ?? "reachable"))
        for a in active {
            var line = "  \(a["state"]?.stringValue ?? "?") \(a["id"]?.stringValue ?? "?")"
            if runtime.config.appsSection != nil, case .array(let apps)? = a["apps"] { line += " [app \(apps.compactMap(\.stringValue).joined(separator: ","))]" }
            if case .int(let finished)? = a["finished"] {
                line += ": \(finished)"
                if case .int(let targets)? = a["targets"] { line += "/\(targets)" }
                line += " targets final"
                if case .int(let failed)? = a["failed"], failed > 0 { line += ", \(failed) failed" }
                if case .int(let capped)? = a["capped"], capped > 0 { line += ", \(capped) capped" }
            }
            if case .int(let rate)? = a["rate_per_s"] { line += ", \(rate)/s" }
            if case .int(let eta)? = a["eta_s"] { line += ", \(RunMonitor.duration(Double(eta))) left" }
            if case .int(let spread)? = a["spread_over_seconds"] { line += ", paced over \(RunMonitor.duration(Double(spread)))" }
            if let wave = a["next_wave"], let at = wave["at"]?.stringValue, case .int(let n)? = wave["devices"] {
                line += ", next wave at \(at) to \(n == 1 ? "1 device" : "\(n) devices")"
            }
            print(line)
        }
        for p in providers { print("  \(p.line(now: now))") }
        for (provider, limit) in runtime.config.maxPerSecond.sorted(by: { $0.key < $1.key }) {
            print("  provider \(provider) capped at \(Metrics.number(limit))/s")
        }
        for p in PauseRecord.all(in: spool) {
            print("  provider \(p["provider"]?.stringValue ?? "?") last paused (10 min) at \(p["at"]?.stringValue ?? "?"): \(p["reason"]?.stringValue ?? "")")
        }
        for f in failures {
            print("  failed \(f["file"]?.stringValue ?? "?"): \(f["error"]?.stringValue ?? "")")
        }
        if let queue {
            let location = queue["location"]?.stringValue ?? "?"
            if let error = queue["error"]?.stringValue {
                print("  shared queue in \(location): cannot be read (\(error))")
            } else {
                print("  shared queue in \(location):")
                for line in QueueStatus.lines(queue) { print("    \(line)") }
            }
        }
        if showHooks {
            print("  webhooks: \(hooks.pending) event(s) pending, \(hooks.failed) given up (kept in webhooks/failed/)")
        }
        return .ok
    }

    /// `status ID`: the job's entry (as `GET /v1/jobs/{id}` gives it) and its funnel.
    static func job(_ id: String, runtime: Runtime, json: Bool) throws(CLIError) -> ExitCode {
        // A word that is no job id is most likely a misplaced spool or a switch without its dashes.
        if Identifier.jobIDProblem(id) != nil {
            throw CLIError(.usage, "status: unexpected argument \"\(id)\" (status takes one job id; a spool is --spool DIR)")
        }
        let entry = JobStatus(spool: runtime.spool, defaultApp: runtime.config.defaultApp).lookup(id: id)
        let funnel = try FunnelReport.funnel(id, runtime: runtime, command: "status")
        guard entry != nil || funnel != nil else {
            let option = Spelling.closest(to: id, among: ["json"]).map { " (did you mean --\($0)?)" } ?? ""
            throw CLIError(.usage, "status: no job \(id) in \(runtime.spool.root.path) or the registry\(option)")
        }
        var fields: [(String, JSONValue)] = []
        if case .object(let pairs)? = entry { fields = pairs } else { fields = [("id", .string(id))] }
        fields.append(("funnel", funnel?.json ?? .null))
        if json {
            print(JSONValue.object(fields).encodedString)
            return .ok
        }
        var line = "job \(id): \(entry?["state"]?.stringValue ?? "ended elsewhere")"
        if case .int(let delivered)? = entry?["delivered"] { line += ", \(delivered) delivered" }
        if case .int(let failed)? = entry?["failed"], failed > 0 { line += ", \(failed) failed" }
        print(line)
        funnel?.lines.forEach { print("  " + $0) }
        return .ok
    }

    /// `"queue"`: with the shared queue on, its hosts and running jobs (`QueueStatus`), or
    /// `{"location", "error"}` when the database cannot be read (status goes on without it);
    /// nil when the queue is off.
    static func sharedQueue(_ config: Config, registryProblem: String?) -> JSONValue? {
        guard let queue = EngineSetup.sharedQueue(config: config) else { return nil }
        defer { queue.close() }
        func failed(_ why: String) -> JSONValue { .object([("location", .string(queue.location)), ("error", .string(why))]) }
        // Not asked when the probe just failed: a pool's connect could wait for seconds.
        if let registryProblem { return failed("the registry is unreachable: \(registryProblem)") }
        do { return try QueueStatus(queue: queue).json() } catch { return failed(RegistryError.detail(error)) }
    }

    /// Why a job in `failed/` failed: the failed result log that names its file (under its id,
    /// or the `.invalid-…` log written when the id's log belonged to another job).
    static func failureReason(_ spool: Spool, _ name: String) -> String? {
        let id = jobID(spool, .failed, name)
        let stem = name.hasSuffix(".json") ? String(name.dropLast(5)) : name
        let base = stem.split(separator: ".").first.map(String.init) ?? stem   // x.1.json was x.json
        func reason(_ candidate: String) -> String? {
            guard let log = ResultLogContents.read(spool.url(.results, candidate)), log.summaryStatus == .failed else { return nil }
            if let file = log.file, file != "\(base).json", file != name { return nil }
            return log.summary?.error
        }
        // (A file quarantined for its name has a log under its new name, whatever id it holds.)
        if let found = reason("\(id).jsonl") ?? reason("\(stem).jsonl") { return found }
        // Only then results/ is listed (after a flood it holds a log per job).
        let names = (try? FileManager.default.contentsOfDirectory(atPath: spool.url(.results).path)) ?? []
        return names.filter { $0.hasPrefix("\(id).invalid-") || $0.hasPrefix("\(base).invalid-") }.sorted().reversed().lazy.compactMap(reason).first
    }

    /// The id a job's result log is named after (its `id`, else its file name).
    static func jobID(_ spool: Spool, _ folder: Spool.Folder, _ name: String) -> String {
        JobStatus.jobID(spool, folder, name)
    }

    /// How many jobs of a folder `status` dates at most (in directory order).
    static let datedSample = 20_000
    /// Seconds all folder counts may take together.
    static let countBudget = 0.3

    static func formatAge(_ s: Int) -> String {
        s < 120 ? "\(s)s" : s < 7200 ? "\(s / 60)m" : s < 172_800 ? "\(s / 3600)h" : "\(s / 86400)d"
    }
}
