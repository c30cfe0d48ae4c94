import Foundation
import PushspoolCore

/// Steering a job from any host (`cancel`, `pause`, `resume` and their `POST /v1/jobs/{id}/…`
/// routes): with the shared queue on (README "Several hosts"), the request goes to the queue
/// first, which every host holding a chunk of the job reads within a second (NOTIFY); then to
/// this spool's `control/` through `JobSteering`, when this host holds the job (it accepted it,
/// or it has not reached the queue yet). A job neither knows is unknown (`404`).
public struct SharedSteering: Sendable {
    public let local: JobSteering
    public let queue: PostgresJobQueue?

    public init(spool: Spool, queue: PostgresJobQueue?) {
        local = JobSteering(spool: spool)
        self.queue = queue
    }

    /// What a request did: `local`, this spool's answer (nil: the spool does not hold the job);
    /// `shared`, whether the queue holds it (every host's share was told).
    public struct Steered<Local> {
        public var local: Local?
        public var shared: Bool
    }

    /// A cancel or pause request.
    public func request(_ kind: ControlRequest, id: String) throws(JobSteering.Failure) -> Steered<(folder: Spool.Folder, file: String, already: Bool)> {
        let shared = try steerShared(id, kind)
        return try steered(shared) { () throws(JobSteering.Failure) in try local.request(kind, id: id) }
    }

    /// A resume that waits for this spool's dispatcher (`resume`), see `JobSteering.resume`.
    public func resume(id: String, wait: Double = 5) throws(JobSteering.Failure) -> Steered<(folder: Spool.Folder, resumed: JobSteering.Resumed)> {
        let shared = try steerShared(id, nil)
        return try steered(shared) { () throws(JobSteering.Failure) in try local.resume(id: id, wait: wait) }
    }

    /// A resume that does not wait (`POST /v1/jobs/{id}/resume`), see `JobSteering.requestResume`.
    public func requestResume(id: String) throws(JobSteering.Failure) -> Steered<(folder: Spool.Folder, wasPaused: Bool, dispatcher: Int32?)> {
        let shared = try steerShared(id, nil)
        return try steered(shared) { () throws(JobSteering.Failure) in try local.requestResume(id: id) }
    }

    /// The spool's answer; a job it does not know is fine when the queue knows it.
    private func steered<Local>(_ shared: Bool, _ body: () throws(JobSteering.Failure) -> Local) throws(JobSteering.Failure) -> Steered<Local> {
        do {
            return Steered(local: try body(), shared: shared)
        } catch {
            guard error.kind == .unknown else { throw error }
            guard shared else {
                guard let queue else { throw error }
                throw JobSteering.Failure(kind: .unknown, description: error.description + " or in the shared queue in \(queue.location)")
            }
            return Steered(local: nil, shared: true)
        }
    }

    /// Sets (nil: clears) the job's request in the queue; false: no queue, or the queue has no
    /// such job running.
    private func steerShared(_ id: String, _ kind: ControlRequest?) throws(JobSteering.Failure) -> Bool {
        guard let queue else { return false }
        do { return try queue.steer(id, kind) } catch {
            throw JobSteering.Failure(kind: .io, description: "the shared queue in \(queue.location): \(RegistryError.detail(error))")
        }
    }
}
