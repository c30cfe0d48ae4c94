import Foundation
import PushspoolCore

extension JobStatus {
    /// The `status --json` entry of job `id`, waiting in `incoming/` as file `name`, whose
    /// `not_before` is `notBefore`: `lookup` reads that from the file, the campaign list from
    /// what it read of the file once (a filter over 10,000 queued jobs reads none of them).
    public func waiting(id: String, name: String, notBefore: Date?, now: Date? = nil) -> JSONValue {
        .object([("id", .string(id)), ("file", .string(name)), ("running", false), ("state", .string(waitingState(id: id, notBefore: notBefore, now: now).rawValue)),
                 ("not_before", notBefore.map { .string(Timestamp.rfc3339($0)) } ?? .null)])
    }

    /// Where a job in `incoming/` stands: what an operator asked of it, else whether its
    /// `not_before` is still ahead.
    public func waitingState(id: String, notBefore: Date?, now: Date? = nil) -> JobState {
        let now = now ?? clock.wall()
        return switch controls.request(for: id) {
        case .cancel?: .cancelling
        case .pause?: .paused
        case nil: notBefore.map { $0 > now } ?? false ? .scheduled : .waiting
        }
    }

    /// A send job's `not_before`.
    public static func notBefore(_ job: Job?) -> Date? {
        if case .send(let send)? = job?.kind { return send.notBefore }
        return nil
    }
}
