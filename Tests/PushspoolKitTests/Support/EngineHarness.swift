import Foundation
import Synchronization
@testable import PushspoolKit
import PushspoolCore

/// A spool + registry + engine in a fresh temporary directory, with scripted providers.
final class EngineHarness {
    let dir = TempDir("pushspool-engine")
    let spool: Spool
    let registry: SQLiteRegistry
    var policy = RetryPolicy(maxAttempts: 4, baseDelay: 0.001, maxDelay: 0.01)
    var concurrency = 16

    init() throws {
        spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
    }

    deinit { registry.close() }

    @discardableResult
    func register(_ id: String, _ platform: Platform, tags: [String], handle: String? = nil) throws -> Device {
        try registry.upsert(Registration(id: id, platform: platform, handle: handle ?? "handle-\(id)", tags: tags))
    }

    /// Drops a job file atomically, as a writer service would.
    func drop(_ name: String, _ json: String) throws {
        try spool.submit(Array(json.utf8), name: name)
    }

    func makeDispatcher(routes: [Platform: ProviderState], stopping: @escaping @Sendable () -> Bool = { false },
                        reports: ReportList = ReportList()) -> Dispatcher {
        makeEngine(routes: routes, stopping: stopping, reports: reports).dispatcher
    }

    /// The engine on this spool and registry, built as `run` builds it, with `routes` for providers.
    func makeEngine(routes: [Platform: ProviderState], stopping: @escaping @Sendable () -> Bool = { false },
                    reports: ReportList = ReportList(), maxJobs: Int = 4) -> Engine {
        var config = Config()
        config.concurrency = concurrency
        config.retry = policy
        config.maxJobs = maxJobs
        return Engine(config: config, spool: spool, registry: registry, routes: routes,
                      hooks: Engine.Hooks(log: Log(minimum: .error), isStopping: stopping, report: reports.add, random: { 0.5 }))
    }

    /// Runs `run --once` with every platform routed to `provider`; returns the reports.
    @discardableResult
    func runOnce(_ provider: any PushProvider) -> [JobReport] {
        let state = ProviderState(provider: provider)
        let reports = ReportList()
        makeDispatcher(routes: [.apns: state, .fcm: state, .wns: state], reports: reports).runOnce()
        return reports.all
    }

    func records(_ id: String) -> [ResultRecord] { dir.records("spool/results/\(id).jsonl") }
    func summary(_ id: String) -> ResultRecord.Summary? { records(id).compactMap(\.asSummary).last }
    func deliveries(_ id: String) -> [ResultRecord.Delivery] { records(id).compactMap(\.asDelivery) }
    func list(_ folder: Spool.Folder) -> [String] { spool.jobs(in: folder) }
}

/// Every report a test dispatcher gave, in order.
final class ReportList: Sendable {
    private let reports = Mutex<[JobReport]>([])
    func add(_ r: JobReport) { reports.withLock { $0.append(r) } }
    var all: [JobReport] { reports.withLock { $0 } }
}
