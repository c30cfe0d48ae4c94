import PushspoolKit
import Dispatch
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The JSON behind the dashboard's pages. Nothing here counts on its own: a job's figures are
/// `GET /v1/jobs/{id}`'s answer (`JobAPI.statusAnswer`: `JobStatus` and the desk's funnel), the
/// audience and payloads are `validate --resolve`'s (`SendPreview`), device counts are the
/// registry's own walk (as `devices`), and the system page is what `status --json` and
/// `/metrics` read (dispatcher presence, pause records, the webhook journal, the metrics text).
struct DashboardData: Sendable {
    let config: Config
    let spool: Spool
    let registry: any DeviceRegistry
    let queue: PostgresJobQueue?
    let desk: FunnelCache?
    let operations: OperationsAPI
    let index: CampaignIndex
    let digests: ResultLogDigests
    let deviceCounts: DeviceCounts

    let answers = CampaignAnswers()

    /// `digests`: the result logs' digests the desk reads its funnel from too (one read of each log).
    init(config: Config, spool: Spool, registry: any DeviceRegistry, queue: PostgresJobQueue?, desk: (any NotificationDesk)?,
         operations: OperationsAPI, digests: ResultLogDigests) {
        self.config = config
        self.spool = spool
        self.registry = registry
        self.queue = queue
        // Polled by every open page: a job's funnel is worked out once a second at most.
        self.desk = desk.map { desk in
            FunnelCache(desk: desk) { job in
                ((try? FileManager.default.attributesOfItem(atPath: spool.resultURL(jobID: job).path)[.size]) as? NSNumber)?.int64Value ?? -1
            }
        }
        self.operations = operations
        index = CampaignIndex(spool: spool, defaultApp: config.defaultApp)
        self.digests = digests
        deviceCounts = DeviceCounts(registry: registry, config: config)
    }

    static let perPage = 50

    // MARK: Campaigns

    /// `GET /ui/api/jobs?state=a,b&app=&q=&page=`: one page of every job, newest first.
    func campaigns(_ query: [String: String]) -> ServerResponse {
        var filter = CampaignIndex.Filter()
        filter.states = Set((query["state"] ?? "").split(separator: ",").map { String($0) }.filter { !$0.isEmpty })
        filter.app = query["app"].flatMap { $0.isEmpty ? nil : $0 }
        filter.text = query["q"]
        let page = max(1, Int(query["page"] ?? "") ?? 1)
        let perPage = min(200, max(1, Int(query["per_page"] ?? "") ?? Self.perPage))
        let status = JobStatus(spool: spool)
        let now = Date()
        let result = index.page(filter, page: page, perPage: perPage) { entry in
            // A queued job's state from what its file said when listed (`JobStatus`'s own rule):
            // a filter over thousands of them reads none of their files.
            if entry.folder == .incoming { return status.waitingState(id: entry.id, notBefore: entry.notBefore, now: now).rawValue }
            return statusEntry(entry, status)["state"]?.stringValue
        }
        let jobs: [JSONValue] = result.entries.map { e in
            .object([
                ("id", .string(e.id)), ("kind", .string(e.kind)), ("folder", .string(e.folder.rawValue)),
                ("apps", .array(e.apps.map(JSONValue.string))), ("platforms", .array(e.platforms.map(JSONValue.string))),
                ("headline", e.headline.map(JSONValue.string) ?? .null), ("secure", .bool(e.secure)),
                ("file_time", .string(Timestamp.rfc3339(Date(timeIntervalSince1970: e.modified)))),
                ("status", statusEntry(e, status)),
            ])
        }
        return .json(200, .object([
            ("total", .int(Int64(result.total))), ("page", .int(Int64(page))), ("per_page", .int(Int64(perPage))),
            ("jobs", .array(jobs)), ("apps", .array(config.apps.keys.sorted().map(JSONValue.string))),
        ]))
    }

    /// A listed job's `status --json` entry.
    private func statusEntry(_ e: CampaignIndex.Entry, _ status: JobStatus) -> JSONValue {
        if e.folder == .active { return status.active(name: e.name) }
        if let found = status.lookup(id: e.id) { return found }
        if e.folder == .incoming { return status.waiting(id: e.id, name: e.name, notBefore: e.notBefore) }
        let state = e.folder == .failed ? "failed" : "done"
        return .object([("id", .string(e.id)), ("file", .string(e.name)), ("running", false), ("state", .string(state))])
    }

    // MARK: One campaign

    /// `GET /ui/api/jobs/{id}`: its status and funnel (as `GET /v1/jobs/{id}`), what the job
    /// asks for (never a secure job's text), failures by reason with what they mean, outcomes
    /// over time and its waves.
    func campaign(id: String) -> ServerResponse {
        answers.answer(id: id) { campaignAnswer(id: id) }
    }

    private func campaignAnswer(id: String) -> ServerResponse {
        let job = index.job(id: id)
        let answer = JobAPI.statusAnswer(id: id, status: JobStatus(spool: spool), queue: queue, desk: nil)
        guard answer.status == 200, case .bytes(let bytes) = answer.body, var status = try? JSONParser.parse(bytes) else { return answer }
        if let desk {
            // An ended job that apps cannot report on keeps its funnel: read again once a minute, not at every poll.
            let ended = ["done", "cancelled", "failed"].contains(status["state"]?.stringValue ?? "")
            var reported = true
            if case .send(let send)? = job?.kind { reported = send.tracking != .off || config.apps.values.contains { $0.track } }
            status = JobAPI.withFunnel(status, id: id, desk: ended && !reported ? desk.reader(lifetime: 60) : desk)
        }
        let digest = digests.digest(id: id)
        let failures: [JSONValue] = digest.failures.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key.reason < $1.key.reason }.map { key, n in
            let guide = FailureGuide.entry(platform: key.platform, code: key.code, reason: key.reason)
            return .object([("platform", .string(key.platform)), ("status", .string(key.status)), ("code", .string(key.code)), ("reason", .string(key.reason)),
                            ("count", .int(Int64(n))), ("meaning", .string(guide.meaning)), ("action", .string(guide.action))])
        }
        let series = digest.series()
        let waves: [JSONValue] = digest.waves.map { w in
            .object([("status", .string(w.status)), ("at", .string(w.at)), ("zones", .array(w.zones.map(JSONValue.string))),
                     ("devices", .int(Int64(w.devices))), ("reason", w.reason.map(JSONValue.string) ?? .null)])
        }
        return .json(200, .object([
            ("status", status), ("job", describe(job)), ("failures", .array(failures)),
            ("series", .object([
                ("start", .int(Int64(series.start))), ("step_s", .int(Int64(series.step))),
                ("delivered", .array(series.buckets.map { .int(Int64($0.delivered)) })),
                ("failed", .array(series.buckets.map { .int(Int64($0.failed + $0.unregistered)) })),
            ])),
            ("waves", .array(waves)),
        ]))
    }

    /// What the job file asks for; a secure job's text is never included.
    private func describe(_ job: Job?) -> JSONValue {
        guard let job else { return .null }
        guard case .send(let send) = job.kind else { return .object([("kind", .string(Self.kind(job)))]) }
        var pairs: [(String, JSONValue)] = [
            ("kind", "send"), ("apps", .array((JobStatus.apps(job, defaultApp: config.defaultApp) ?? []).map(JSONValue.string))),
            ("platforms", .array(send.platforms.map { .string($0.rawValue) })), ("audience", .string(Self.audience(send.audience))),
            ("secure", .bool(send.secure)), ("track", .bool(send.track)), ("capped", .bool(send.capped)),
            ("languages", .array(send.localized.keys.sorted().map { .string($0.value) })),
            ("not_before", send.notBefore.map { .string(Timestamp.rfc3339($0)) } ?? .null),
            ("spread_over_seconds", send.spreadOverSeconds.map { .int(Int64($0)) } ?? .null),
        ]
        if let local = send.localDelivery {
            pairs.append(("local_time", .string("\(local.time)")))
            pairs.append(("local_date", local.date.map { .string("\($0)") } ?? .null))
        }
        if !send.secure {
            pairs.append(("title", send.message.title.map(JSONValue.string) ?? .null))
            pairs.append(("message", .string(send.message.text)))
            pairs.append(("data", .object(send.message.data.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        }
        return .object(pairs)
    }

    static func kind(_ job: Job) -> String {
        switch job.kind {
        case .send: "send"
        case .register: "register"
        case .unregister: "unregister"
        }
    }

    static func audience(_ a: Audience) -> String {
        switch a {
        case .tag(let t): "tag \(t)"
        case .expression(_, let source): "tags \(source)"
        case .broadcast: "everyone (broadcast)"
        case .fcmTopic(let t): "FCM topic \(t)"
        case .fcmCondition(let c): "FCM condition \(c)"
        case .apnsChannel(let c): "APNs channel \(c)"
        }
    }

    /// `GET /ui/api/jobs/{id}/results.csv`: the delivery lines of the result log as CSV, streamed.
    /// A cell that a spreadsheet would take for a formula is prefixed with `'`.
    func resultsCSV(id: String) -> ServerResponse {
        let url = spool.resultURL(jobID: id)
        guard let input = FileHandle(forReadingAtPath: url.path) else { return .error(404, "id: job \(id) has no result log (yet)") }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            try? input.close()
            return .error(503, "cannot read the results now: \(String(cString: strerror(errno)))", headers: [("Retry-After", "5")])
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let writer = ends[1]
        DispatchQueue.global(qos: .utility).async {
            defer { close(writer); try? input.close() }
            var out = Array("at,platform,app,provider,target,status,attempts,code,reason\n".utf8)
            var carry: [UInt8] = []
            while let data = try? input.read(upToCount: 1 << 20), !data.isEmpty {
                carry.append(contentsOf: data)
                var start = 0
                while let nl = carry[start...].firstIndex(of: 0x0A) {
                    if case .delivery(let d)? = ResultRecord(line: carry[start..<nl]) { out += Self.csvRow(d) }
                    start = nl + 1
                }
                carry.removeFirst(start)
                if out.count > 1 << 16 {
                    guard (try? FileIO.writeAll(writer, out)) != nil else { return }
                    out.removeAll(keepingCapacity: true)
                }
            }
            try? FileIO.writeAll(writer, out)
        }
        return ServerResponse(status: 200, headers: [("Content-Type", "text/csv; charset=utf-8"),
                                                     ("Content-Disposition", "attachment; filename=\"\(id).csv\"")], body: .pipe(fd: ends[0]))
    }

    static func csvRow(_ d: ResultRecord.Delivery) -> [UInt8] {
        let target: String = switch d.target {
        case .device(let id): id
        case .tags(let t): t ?? "*"
        case .service(let field, let value): "\(field):\(value)"
        }
        let cells = [d.at ?? "", d.platform.rawValue, d.app ?? "", d.provider, target, d.status.rawValue, String(d.attempts), d.code ?? "", d.reason ?? ""]
        return Array((cells.map(csvCell).joined(separator: ",") + "\n").utf8)
    }

    static func csvCell(_ s: String) -> String {
        var s = s
        if let first = s.first, "=+-@\t\r".contains(first) { s = "'" + s }
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Compose

    /// `POST /ui/api/preview`: the job the form describes, validated as `POST /v1/jobs` will, and
    /// for a valid send job who it reaches now and what each platform would receive. Problems
    /// are an answer here (`200`), each naming its field: the form shows them beside the fields.
    func preview(_ body: [UInt8]) -> ServerResponse {
        let job: Job
        do {
            job = try JobParser.parse(body, fileName: "preview.json")
        } catch {
            return .json(200, .object([("ok", false), ("problems", Self.problems(error.problems.map { ($0.field, $0.message) }))]))
        }
        guard case .send(let send) = job.kind else { return .json(200, .object([("ok", true), ("reach", .array([])), ("payloads", .array([]))])) }
        if case .failure(let problem) = send.apps.resolve(known: Set(config.apps.keys), defaultApp: config.defaultApp) {
            return .json(200, .object([("ok", false), ("problems", Self.problems([(problem.field, problem.message)]))]))
        }
        let preview: SendPreview
        do { preview = try SendPreview.make(send, config: config, registry: registry) } catch {
            return .error(503, "the registry cannot be read now: \(RegistryError.detail(error))", headers: [("Retry-After", "5")])
        }
        let renderProblems = preview.payloads.compactMap { p in p.renderError.map { ("message", "\(p.platform.rawValue): \($0)") } }
        return .json(200, .object([
            ("ok", .bool(renderProblems.isEmpty)), ("problems", Self.problems(renderProblems)), ("devices", .int(Int64(preview.devices))),
            ("reach", .array(preview.reach.map { r in
                .object([("app", .string(r.app)), ("platform", .string(r.platform.rawValue)), ("route", .string(r.route)),
                         ("devices", r.devices.map { .int(Int64($0)) } ?? .null),
                         ("environments", r.environments.map { e in .object(e.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key.rawValue, .int(Int64($0.value))) }) } ?? .null),
                         ("note", r.note.map(JSONValue.string) ?? .null)])
            })),
            ("payloads", .array(preview.payloads.map { p in
                .object([("platform", .string(p.platform.rawValue)), ("language", p.language.map { .string($0.value) } ?? .null), ("body", .string(p.body))])
            })),
        ]))
    }

    /// `POST /ui/api/jobs`: what the compose page would have shown beside its fields, refused
    /// before the job API queues anything (that API knows no config, so it cannot see an unknown
    /// app, and a payload too large for a platform is otherwise found only when sending). nil:
    /// on to `POST /v1/jobs`'s path, which reports the job file's own problems.
    func refusal(_ body: [UInt8]) -> ServerResponse? {
        guard let job = try? JobParser.parse(body, fileName: "compose.json"), case .send(let send) = job.kind else { return nil }
        var problems: [(String, String)] = []
        if case .failure(let problem) = send.apps.resolve(known: Set(config.apps.keys), defaultApp: config.defaultApp) {
            problems.append((problem.field, problem.message))
        }
        for platform in send.platforms {
            for language in [nil] + (send.secure ? [] : send.localized.keys.sorted()) {
                do { _ = try PayloadRenderer.render(language.map { send.message(in: $0) } ?? send.message, for: platform, tracking: send.tracking) } catch {
                    problems.append(("message", "\(platform.rawValue): \(error.description)"))
                }
            }
        }
        guard let first = problems.first else { return nil }
        return .json(400, .object([("error", .string("\(first.0): \(first.1)")), ("problems", Self.problems(problems))]))
    }

    static func problems(_ list: [(String, String)]) -> JSONValue {
        .array(list.map { .object([("field", .string($0.0)), ("message", .string($0.1))]) })
    }

    // MARK: Devices and system

    /// `GET /ui/api/devices?tags=EXPR`: counts per app, platform, environment, language and zone.
    func devices(tags: String?) -> ServerResponse {
        var expression: TagExpression?
        if let tags, !tags.trimmingCharacters(in: .whitespaces).isEmpty {
            do { expression = try TagExpression.parse(tags) } catch {
                return .json(200, .object([("ok", false), ("problems", Self.problems([("tags", error.description)]))]))
            }
        }
        do {
            return .json(200, try deviceCounts.json(expression, key: tags ?? ""))
        } catch {
            return .error(503, "the registry cannot be read now: \(RegistryError.detail(error))", headers: [("Retry-After", "5")])
        }
    }

    /// `GET /ui/api/system`: what `status --json` says of the spool, dispatchers, providers, the
    /// shared queue and webhooks, and the provider families of `/metrics`.
    func system() -> ServerResponse {
        let now = Date()
        let dispatchers = DispatcherPresence.running(on: spool, now: now)
        let hooks = WebhookJournal.counts(spoolRoot: spool.root)
        var queueValue: JSONValue = .null
        if let queue {
            do { queueValue = try QueueStatus(queue: queue).json() } catch {
                queueValue = .object([("location", .string(queue.location)), ("error", .string(RegistryError.detail(error)))])
            }
        }
        let folders: [(String, JSONValue)] = [Spool.Folder.incoming, .active, .done, .failed].map { ($0.rawValue, .int(Int64(spool.count($0)))) }
        return .json(200, .object([
            ("spool", .string(spool.root.path)),
            ("dispatchers", .array(dispatchers.map { $0.json() })),
            ("registry", RegistryProbe.json(RegistryProbe(config: config, timeout: 0.3, open: registry).problem())),
            ("folders", .object(folders)),
            ("providers", .array(DispatcherPresence.providers(of: dispatchers).map { $0.json() })),
            ("paused_providers", .array(PauseRecord.all(in: spool))),
            ("rate_limits", .object(config.maxPerSecond.sorted { $0.key < $1.key }.map { ($0.key, .double($0.value)) })),
            ("webhooks", .object([("pending", .int(Int64(hooks.pending))), ("failed", .int(Int64(hooks.failed)))])),
            ("queue", queueValue),
            ("metrics", .array(Self.providerSamples(operations.render()))),
        ]))
    }

    /// The samples of `/metrics` an operator reads per provider: deliveries and their outcomes,
    /// retries, pauses, request counts and time, queue depth, targets left (name, labels, value),
    /// from the very text `/metrics` serves (histogram buckets left out).
    static func providerSamples(_ text: String) -> [JSONValue] {
        let wanted = ["pushspool_deliveries_total", "pushspool_retries_total", "pushspool_provider_paused",
                      "pushspool_provider_connections", "pushspool_provider_requests_in_flight", "pushspool_provider_errors_total",
                      "pushspool_provider_request_duration_seconds_count", "pushspool_provider_request_duration_seconds_sum",
                      "pushspool_queue", "pushspool_targets_remaining", "pushspool_jobs_total", "pushspool_notification_events_total"]
        var out: [JSONValue] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard wanted.contains(where: { line.hasPrefix($0) }), let space = line.lastIndex(of: " ") else { continue }
            let series = line[..<space]
            let name = series.prefix { $0 != "{" }
            let labels = series.dropFirst(name.count)
            out.append(.object([("name", .string(String(name))), ("labels", .string(String(labels))),
                                ("value", .string(String(line[line.index(after: space)...])))]))
            if out.count >= 500 { break }
        }
        return out
    }
}
