import Dispatch
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An operator's request about one job (`cancel`, `pause`, `resume`), from the CLI or
/// `POST /v1/jobs/{id}/cancel|pause|resume`: written into `control/`, which running dispatchers
/// watch (inotify) and act on at once. Only a job still waiting in `incoming/` or claimed in `active/` can
/// be steered.
public struct JobSteering: Sendable {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// No such job here (`404`).
            case unknown
            /// The job has ended (`409`).
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
    public func request(_ kind: ControlRequest, id given: String) throws(Failure) -> (folder: Spool.Folder, file: String, already: Bool) {
        let (folder, file, id) = try locate(given)
        if FileManager.default.fileExists(atPath: controls.url(id, kind).path) { return (folder, file, true) }
        do {
            try controls.write(kind, id: id)
        } catch {
            throw Failure(kind: .io, description: "\(error)")
        }
        return (folder, file, false)
    }

    /// What a resume did.
    public enum Resumed: Sendable, Equatable {
        /// The job was not paused: nothing to do (a second `resume` at the same moment, too).
        case notPaused
        /// A running dispatcher (its pid) has looked at the spool again since: a resumed job in
        /// `active/` is sending again (or waits for a free job slot).
        case acknowledged(pid: Int32)
        /// No dispatcher runs on this spool: the next `run` takes the job.
        case noDispatcher
        /// A dispatcher runs but did not acknowledge within the bound (stopped, overloaded); it
        /// takes the job up when it looks at `control/` again.
        case unacknowledged(pid: Int32)
    }

    /// Takes a pause back, like `mkdir -p`: a job that is not paused is left as it is. A resume
    /// that removed the pause waits, at most `wait` seconds, for a running dispatcher to
    /// acknowledge it (`JobControls.resumeMarkers`). Returns the job's folder.
    public func resume(id given: String, wait: Double = 5) throws(Failure) -> (folder: Spool.Folder, resumed: Resumed) {
        let (folder, _, id) = try locate(given)
        // Removing the pause is the resume; of two resumes at once, one removes it and the
        // other finds it gone, which is the state both asked for.
        if unlink(controls.url(id, .pause).path) != 0 {
            if errno == ENOENT { return (folder, .notPaused) }
            throw Failure(kind: .io, description: "cannot remove \(controls.url(id, .pause).path): \(String(cString: strerror(errno)))")
        }
        let running = DispatcherPresence.running(on: spool)
        guard let stalled = running.first else { return (folder, .noDispatcher) }
        // Only stalled ones (SIGSTOP): they see the pause gone when they go on; nobody acknowledges now.
        guard let dispatcher = running.last(where: \.isResponding) else { return (folder, .unacknowledged(pid: stalled.record.pid)) }
        do { try controls.writeResumeMarker(id: id) } catch { return (folder, .unacknowledged(pid: dispatcher.record.pid)) }
        let marker = controls.resumeMarkerURL(id).path
        let acknowledged = Self.until(wait, watching: controls.directory) { access(marker, F_OK) != 0 }
        if !acknowledged { controls.acknowledgeResume(id) }    // nobody else will
        return (folder, acknowledged ? .acknowledged(pid: dispatcher.record.pid) : .unacknowledged(pid: dispatcher.record.pid))
    }

    /// A resume that does not wait (`POST /v1/jobs/{id}/resume`): the pause is removed, durably,
    /// and a running dispatcher is told (the marker it acknowledges when it takes the job up
    /// again). Returns the job's folder, whether it was paused, and the responding dispatcher's
    /// pid (nil: none runs, the next `run` takes the job).
    public func requestResume(id given: String) throws(Failure) -> (folder: Spool.Folder, wasPaused: Bool, dispatcher: Int32?) {
        let (folder, _, id) = try locate(given)
        if unlink(controls.url(id, .pause).path) != 0 {
            if errno == ENOENT { return (folder, false, nil) }
            throw Failure(kind: .io, description: "cannot remove \(controls.url(id, .pause).path): \(String(cString: strerror(errno)))")
        }
        do { try FileIO.syncDirectory(spool.url(.control)) } catch {
            throw Failure(kind: .io, description: "the resume may not survive a crash: \(error)")
        }
        // A stalled dispatcher sees the pause gone when it goes on; no marker for it.
        guard let dispatcher = DispatcherPresence.running(on: spool).last(where: \.isResponding) else { return (folder, true, nil) }
        try? controls.writeResumeMarker(id: id)
        return (folder, true, dispatcher.record.pid)
    }

    /// Waits at most `seconds` for `condition`, asking it again at each change in `directory`
    /// (the dispatcher acknowledges by removing a file there), never in between.
    private static func until(_ seconds: Double, watching directory: URL, _ condition: () -> Bool) -> Bool {
        let changed = DispatchSemaphore(value: 0)
        let watcher = SpoolWatcher(directory: directory, removals: true)
        watcher.start { changed.signal() }
        defer { watcher.stop() }
        let end = DispatchTime.now() + seconds
        // Asked once the watch is on: a change before it is seen here.
        while !condition() {
            if changed.wait(timeout: end) == .timedOut { return condition() }
        }
        return true
    }

    /// Where the job with this id is: `incoming/` or `active/`, its file name, and its id as the
    /// job spells it (job ids are one whatever their case: `pause case1` steers job `Case1`, and
    /// the request is written under `Case1`, the name the dispatcher looks for).
    public func locate(_ id: String) throws(Failure) -> (folder: Spool.Folder, file: String, id: String) {
        let key = Identifier.jobKey(id)
        for folder in [Spool.Folder.active, .incoming] {
            // The usual case first: the file is named after the id.
            let named = "\(id).json"
            if FileManager.default.fileExists(atPath: spool.url(folder, named).path),
               case let own = JobStatus.jobID(spool, folder, named), Identifier.jobKey(own) == key { return (folder, named, own) }
        }
        for folder in [Spool.Folder.active, .incoming] {
            for name in spool.jobs(in: folder) {
                let own = JobStatus.jobID(spool, folder, name)
                if Identifier.jobKey(own) == key { return (folder, name, own) }
            }
        }
        if let summary = ResultLogTail.summary(spool.resultURL(jobID: id)) {
            throw Failure(kind: .conflict, description: "job \(id) has already ended (\(summary.status.rawValue)); see \(spool.resultURL(jobID: id).path)")
        }
        throw Failure(kind: .unknown, description: "no job with id \(id) is waiting in incoming/ or running in active/ of \(spool.root.path)")
    }
}
