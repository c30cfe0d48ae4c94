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
/// and steer it, as `submit`, `status`, `cancel`, `pause` and `resume` do on the host. With the
/// shared queue on (`queue`), a job another host accepted is read and steered through it.
public struct JobAPI: Sendable {
    let spool: Spool
    let intake: JobIntake
    let queue: PostgresJobQueue?
    /// Where the funnel of `GET /v1/jobs/{id}` comes from; nil: no `"funnel"`.
    let desk: (any NotificationDesk)?

    public init(spool: Spool, intake: JobIntake, queue: PostgresJobQueue? = nil, desk: (any NotificationDesk)? = nil) {
        self.spool = spool
        self.intake = intake
        self.queue = queue
        self.desk = desk
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

    /// `GET /v1/jobs/{id}`: the job's entry of `status --json`; for a job only the shared queue
    /// holds (another host accepted it), its queue entry (`QueueStatus.lookup`).
    func status(_ call: FrontDoor.RouteCall) {
        guard let id = Self.jobID(call) else { return }
        let status = JobStatus(spool: spool)
        let (queue, desk) = (queue, desk)
        call.later { Self.statusAnswer(id: id, status: status, queue: queue, desk: desk) }
    }

    /// `GET /v1/jobs/{id}`'s answer (also the dashboard's campaign page's status): the spool's
    /// entry, else the shared queue's, with the funnel when there is a desk.
    static func statusAnswer(id: String, status: JobStatus, queue: PostgresJobQueue?, desk: (any NotificationDesk)?) -> ServerResponse {
        let entry: JSONValue
        if let local = status.lookup(id: id) {
            entry = local
        } else {
            guard let queue else { return .error(404, "id: no job \(id) in this spool") }
            do throws(RegistryError) {
                guard let shared = try QueueStatus(queue: queue).lookup(id: id) else {
                    return .error(404, "id: no job \(id) in this spool or in the shared queue")
                }
                entry = shared
            } catch {
                return Self.queueUnavailable(error)
            }
        }
        guard let desk else { return .json(200, entry) }
        return .json(200, Self.withFunnel(entry, id: id, desk: desk))
    }

    /// The status entry with `"funnel"` (the desk's; events keep counting after the job ended).
    /// A registry that cannot be read leaves the funnel `null` with `funnel_error`: the job's own
    /// status is still worth answering.
    static func withFunnel(_ entry: JSONValue, id: String, desk: any NotificationDesk) -> JSONValue {
        guard case .object(var pairs) = entry else { return entry }
        pairs.removeAll { $0.0 == "funnel" || $0.0 == "funnel_error" }
        do throws(RegistryError) {
            pairs.append(("funnel", try desk.funnel(job: id).map(\.json) ?? .null))
        } catch {
            pairs.append(("funnel", .null))
            pairs.append(("funnel_error", .string("the registry cannot be read now: \(RegistryError.detail(error))")))
        }
        return .object(pairs)
    }

    /// `GET /v1/jobs/{id}/results`: the result log as it stands, streamed from the file; with no
    /// log here, the log as the shared queue holds it (`PostgresJobQueue.results`).
    func results(_ call: FrontDoor.RouteCall) {
        guard let id = Self.jobID(call) else { return }
        let path = spool.resultURL(jobID: id).path
        let queue = queue
        call.later {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                guard errno == ENOENT else {
                    return .error(503, "cannot read the result log: \(String(cString: strerror(errno)))", headers: [("Retry-After", "5")])
                }
                guard let queue else { return .error(404, "id: job \(id) has no result log (yet)") }
                return Self.queuedResults(queue, id: id, call: call)
            }
            var st = stat()
            fstat(fd, &st)
            return ServerResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")],
                                  body: .file(fd: fd, offset: 0, length: UInt64(st.st_size)))
        }
    }

    /// The log of a job the shared queue holds, streamed through a pipe as it is read (a chunk's
    /// lines at a time); `404` when the queue does not know the job either.
    static func queuedResults(_ queue: PostgresJobQueue, id: String, call: FrontDoor.RouteCall) -> ServerResponse {
        do throws(RegistryError) {
            guard try queue.job(id) != nil else { return .error(404, "id: job \(id) has no result log here or in the shared queue") }
        } catch {
            return queueUnavailable(error)
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            return .error(503, "cannot read the results now: \(String(cString: strerror(errno)))", headers: [("Retry-After", "5")])
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let writer = ends[1]
        call.holding { done in DispatchQueue.global(qos: .utility).async {
            defer { close(writer); done() }
            do {
                _ = try queue.results(id) { try FileIO.writeAll(writer, Array($0.utf8)) }
            } catch is RegistryError {
                // The stream has begun with 200: it ends early, with a last line saying why.
                try? FileIO.writeAll(writer, JSONValue.object([("error", .string("the results stopped: the shared queue failed"))]).encoded() + [0x0A])
            } catch {}   // the client went away
        } }
        return ServerResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: .pipe(fd: ends[0]))
    }

    static func queueUnavailable(_ error: RegistryError) -> ServerResponse {
        .error(503, "the shared queue cannot be read now: \(RegistryError.detail(error))", headers: [("Retry-After", "5")])
    }

    /// Steering requests wait here, one at a time, never on the queue that status, results,
    /// metrics and submissions use: a burst of them delays only each other.
    static let steeringQueue = DispatchQueue(label: "pushspool.serve.steering")

    /// `POST /v1/jobs/{id}/cancel|pause|resume` (`kind` nil: resume): `202` once the request is
    /// durably in `control/` (and, with the shared queue on, in the queue, for every host
    /// holding a share: `"shared_queue": true`), with `state`, the state the job will reach (a
    /// running dispatcher acts on it within milliseconds; `GET /v1/jobs/{id}` shows when it has).
    /// Nothing waits for the dispatcher. A job only the queue holds has `"folder": null`.
    func steer(_ call: FrontDoor.RouteCall, _ kind: ControlRequest?) {
        guard let id = Self.jobID(call) else { return }
        let steering = SharedSteering(spool: spool, queue: queue)
        call.on(Self.steeringQueue) {
            do throws(JobSteering.Failure) {
                if let kind {
                    let steered = try steering.request(kind, id: id)
                    return .json(202, .object([("id", .string(id)), ("requested", .string(kind.rawValue)),
                                               ("folder", steered.local.map { .string($0.folder.rawValue) } ?? .null),
                                               ("already", .bool(steered.local?.already ?? false)), ("shared_queue", .bool(steered.shared)),
                                               ("state", .string(kind == .pause ? "paused" : "cancelled"))]))
                }
                let steered = try steering.requestResume(id: id)
                guard let done = steered.local else {
                    return .json(202, .object([("id", .string(id)), ("requested", "resume"), ("folder", .null), ("resumed", "requested"),
                                               ("shared_queue", true), ("state", "running")]))
                }
                let state = done.folder == .active ? "running" : "waiting"
                return .json(202, .object([("id", .string(id)), ("requested", "resume"), ("folder", .string(done.folder.rawValue)),
                                           ("resumed", .string(!done.wasPaused ? "not_paused" : done.dispatcher == nil ? "no_dispatcher" : "requested")),
                                           ("dispatcher_pid", done.dispatcher.map { .int(Int64($0)) } ?? .null),
                                           ("shared_queue", .bool(steered.shared)), ("state", .string(state))]))
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
