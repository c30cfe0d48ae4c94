import PushspoolKit
import Dispatch
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The job API for services (bearer tokens): submit a job file, read its status and result log,
/// and steer it, as `submit`, `status`, `cancel`, `pause` and `resume` do on the host.
public struct JobAPI: Sendable {
    let spool: Spool
    let intake: JobIntake

    public init(spool: Spool, intake: JobIntake) {
        self.spool = spool
        self.intake = intake
    }

    public var routes: [FrontDoor.Route] {
        [
            .init("POST", "/v1/jobs", .service, submit),
            .init("GET", "/v1/jobs/{id}", .service, status),
            .init("GET", "/v1/jobs/{id}/results", .service, results),
            .init("POST", "/v1/jobs/{id}/cancel", .service) { steer($0, .cancel) },
            .init("POST", "/v1/jobs/{id}/pause", .service) { steer($0, .pause) },
            .init("POST", "/v1/jobs/{id}/resume", .service) { steer($0, nil) },
        ]
    }

    /// `POST /v1/jobs`: the body is a job file. Every problem at once (`400`); an id that exists
    /// already answers that job's status (`200`), never queues it twice; else `202` once durable.
    func submit(_ call: FrontDoor.RouteCall) {
        let generated = JobIntake.newID()
        let job: Job
        do {
            job = try JobParser.parse(call.request.body, fileName: "\(generated).json")
        } catch {
            call.respond(Self.problems(error))
            return
        }
        var bytes = call.request.body
        if bytes.last != 0x0A { bytes.append(0x0A) }
        queue(bytes, id: job.id, call: call) { id in
            .json(202, .object([("id", .string(id)), ("status_url", .string("/v1/jobs/\(id)"))]))
        }
    }

    /// Queues a validated job as `incoming/<id>.json` and answers with `accepted` once it is
    /// durable; an existing job of that id gets its status instead. Shared with the tutorial's
    /// `POST /api/notifications`.
    func queue(_ bytes: [UInt8], id: String, call: FrontDoor.RouteCall,
               accepted: @escaping @Sendable (String) -> ServerResponse) {
        let status = JobStatus(spool: spool)
        let intake = intake
        call.holding { done in
            call.work.async {
                // Answered `503` at its deadline before its turn came: nothing is written.
                if call.exchange.isAnswered { return done() }
                if let existing = status.lookup(id: id) {
                    call.respond(.json(200, existing))
                    return done()
                }
                intake.submit(bytes, name: "\(id).json") { outcome in
                    switch outcome {
                    case .queued:
                        call.respond(accepted(id))
                    case .exists:
                        // Another request with this id got there first.
                        call.later { status.lookup(id: id).map { .json(200, $0) } ?? accepted(id) }
                    case .failed(let why):
                        call.respond(.error(503, "the job could not be made durable: \(why)", headers: [("Retry-After", "5")]))
                    }
                    done()
                }
            }
        }
    }

    /// `GET /v1/jobs/{id}`: the job's entry of `status --json`.
    func status(_ call: FrontDoor.RouteCall) {
        guard let id = Self.jobID(call) else { return }
        let status = JobStatus(spool: spool)
        call.later {
            status.lookup(id: id).map { .json(200, $0) } ?? .error(404, "id: no job \(id) in this spool")
        }
    }

    /// `GET /v1/jobs/{id}/results`: the result log as it stands, streamed from the file.
    func results(_ call: FrontDoor.RouteCall) {
        guard let id = Self.jobID(call) else { return }
        let path = spool.resultURL(jobID: id).path
        call.later {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                return errno == ENOENT ? .error(404, "id: job \(id) has no result log (yet)")
                    : .error(503, "cannot read the result log: \(String(cString: strerror(errno)))", headers: [("Retry-After", "5")])
            }
            var st = stat()
            fstat(fd, &st)
            return ServerResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")],
                                  body: .file(fd: fd, offset: 0, length: UInt64(st.st_size)))
        }
    }

    /// Steering requests wait here, one at a time, never on the queue that status, results,
    /// metrics and submissions use: a burst of them delays only each other.
    static let steeringQueue = DispatchQueue(label: "pushspool.serve.steering")

    /// `POST /v1/jobs/{id}/cancel|pause|resume` (`kind` nil: resume): `202` once the request is
    /// durably in `control/`, with `state`, the state the job will reach (a running dispatcher
    /// acts on it within milliseconds; `GET /v1/jobs/{id}` shows when it has). Nothing waits
    /// for the dispatcher.
    func steer(_ call: FrontDoor.RouteCall, _ kind: ControlRequest?) {
        guard let id = Self.jobID(call) else { return }
        let steering = JobSteering(spool: spool)
        call.on(Self.steeringQueue) {
            do throws(JobSteering.Failure) {
                if let kind {
                    let placed = try steering.request(kind, id: id)
                    return .json(202, .object([("id", .string(id)), ("requested", .string(kind.rawValue)),
                                               ("folder", .string(placed.folder.rawValue)), ("already", .bool(placed.already)),
                                               ("state", .string(kind == .pause ? "paused" : "cancelled"))]))
                }
                let done = try steering.requestResume(id: id)
                let state = done.folder == .active ? "running" : "waiting"
                return .json(202, .object([("id", .string(id)), ("requested", "resume"), ("folder", .string(done.folder.rawValue)),
                                           ("resumed", .string(!done.wasPaused ? "not_paused" : done.dispatcher == nil ? "no_dispatcher" : "requested")),
                                           ("dispatcher_pid", done.dispatcher.map { .int(Int64($0)) } ?? .null), ("state", .string(state))]))
            } catch {
                switch error.kind {
                case .unknown: return .error(404, "id: \(error.description)")
                case .conflict: return .error(409, "id: \(error.description)")
                case .io: return .error(503, "the request could not be written: \(error.description)", headers: [("Retry-After", "5")])
                }
            }
        }
    }

    /// The `{id}` segment when it is a job id; else the call is answered `400`.
    static func jobID(_ call: FrontDoor.RouteCall) -> String? {
        let id = call.parameters[0]
        if let problem = Identifier.jobIDProblem(id) {
            call.respond(.error(400, "id: \(problem)"))
            return nil
        }
        return id
    }

    /// `400` listing every problem of a job, each with its field.
    static func problems(_ error: JobError) -> ServerResponse {
        .json(400, .object([
            ("error", .string(error.problems.first?.description ?? "invalid job")),
            ("problems", .array(error.problems.map { .object([("field", .string($0.field)), ("message", .string($0.message))]) })),
        ]))
    }
}
