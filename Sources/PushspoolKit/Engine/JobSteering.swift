import Foundation
import PushspoolCore

/// An operator's request about one job (`cancel`, `pause`, `resume`), from the CLI or
/// `POST /v1/jobs/{id}/cancel|pause|resume`: written into `control/`, where running dispatchers
/// see it within a second. Only a job still waiting in `incoming/` or claimed in `active/` can
/// be steered.
public struct JobSteering: Sendable {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// No such job here (`404`).
            case unknown
            /// The job has ended, or is not paused for a resume (`409`).
            case conflict
            /// The request could not be written (`503`).
            case io
        }
        public var kind: Kind
        public var description: String
    }

    public let spool: Spool
    let controls: JobControls

    public init(spool: Spool) {
        self.spool = spool
        controls = JobControls(directory: spool.url(.control))
    }

    /// Writes the request. Returns where the job is and whether that request was already there.
    public func request(_ kind: ControlRequest, id: String) throws(Failure) -> (folder: Spool.Folder, file: String, already: Bool) {
        let (folder, file) = try locate(id)
        if FileManager.default.fileExists(atPath: controls.url(id, kind).path) { return (folder, file, true) }
        do {
            try controls.write(kind, id: id)
        } catch {
            throw Failure(kind: .io, description: "\(error)")
        }
        return (folder, file, false)
    }

    /// Takes a pause back. Returns the job's folder.
    public func resume(id: String) throws(Failure) -> Spool.Folder {
        guard FileManager.default.fileExists(atPath: controls.url(id, .pause).path) else {
            let (folder, _) = try locate(id)
            throw Failure(kind: .conflict, description: "job \(id) (in \(folder.rawValue)/) is not paused")
        }
        let folder = (try? locate(id))?.folder ?? .active
        do {
            try FileManager.default.removeItem(at: controls.url(id, .pause))
        } catch {
            throw Failure(kind: .io, description: "cannot remove \(controls.url(id, .pause).path): \(error.localizedDescription)")
        }
        return folder
    }

    /// Where the job with this id is: `incoming/` or `active/`, and its file name.
    public func locate(_ id: String) throws(Failure) -> (folder: Spool.Folder, file: String) {
        for folder in [Spool.Folder.active, .incoming] {
            // The usual case first: the file is named after the id.
            let named = "\(id).json"
            if FileManager.default.fileExists(atPath: spool.url(folder, named).path),
               JobStatus.jobID(spool, folder, named) == id { return (folder, named) }
        }
        for folder in [Spool.Folder.active, .incoming] {
            for name in spool.jobs(in: folder) where JobStatus.jobID(spool, folder, name) == id { return (folder, name) }
        }
        if let summary = ResultLogTail.summary(spool.resultURL(jobID: id)), let status = summary["status"]?.stringValue {
            throw Failure(kind: .conflict, description: "job \(id) has already ended (\(status)); see \(spool.resultURL(jobID: id).path)")
        }
        throw Failure(kind: .unknown, description: "no job with id \(id) is waiting in incoming/ or running in active/ of \(spool.root.path)")
    }
}
