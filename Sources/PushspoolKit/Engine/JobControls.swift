import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an operator asked of a job: `control/<id>.cancel`, `control/<id>.pause`.
public enum ControlRequest: String, Sendable, CaseIterable {
    case cancel, pause
}

/// The operators' requests in `control/`, as of the last `refresh()`: the dispatcher refreshes it
/// on every inotify event of that folder, and each running job asks it before each target, so a
/// request takes effect within moments (no polling). Cancel wins over pause.
public final class JobControls: Sendable {
    public let directory: URL
    /// What a request's `requested_at` says (its `wall` time).
    private let clock: EngineClock
    private let requests = Mutex<[String: Set<ControlRequest>]>([:])
    /// Whether any request is in force: running jobs ask before every target, and almost always
    /// there is none, so that answer costs one atomic load.
    private let any = Atomic<Bool>(false)

    public init(directory: URL, clock: EngineClock = .system) {
        self.directory = directory
        self.clock = clock
        refresh()
    }

    /// Reads the folder again; true when anything changed.
    @discardableResult
    public func refresh() -> Bool {
        var found: [String: Set<ControlRequest>] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where !name.hasPrefix(".") {
            guard let dot = name.lastIndex(of: "."), let kind = ControlRequest(rawValue: String(name[name.index(after: dot)...])) else { continue }
            found[String(name[..<dot]), default: []].insert(kind)
        }
        return requests.withLock { r in
            defer {
                r = found
                any.store(!found.isEmpty, ordering: .releasing)
            }
            return r != found
        }
    }

    /// The request in force for `id`: cancel before pause.
    public func request(for id: String) -> ControlRequest? {
        guard any.load(ordering: .acquiring) else { return nil }
        return requests.withLock { r in
            guard let set = r[id] else { return nil }
            return set.contains(.cancel) ? .cancel : .pause
        }
    }

    public var isEmpty: Bool { requests.withLock { $0.isEmpty } }

    /// Ids with a request of `kind`.
    public func ids(_ kind: ControlRequest) -> Set<String> {
        requests.withLock { r in Set(r.compactMap { $0.value.contains(kind) ? $0.key : nil }) }
    }

    /// Removes the requests about `id` (its job finished: they are moot).
    public func clear(_ id: String) {
        for kind in ControlRequest.allCases { unlink(url(id, kind).path) }
        requests.withLock { r in
            r.removeValue(forKey: id)
            any.store(!r.isEmpty, ordering: .releasing)
        }
    }

    public func url(_ id: String, _ kind: ControlRequest) -> URL {
        directory.appendingPathComponent("\(id).\(kind.rawValue)")
    }

    /// Writes a request atomically (a hidden temporary file renamed into place).
    public func write(_ kind: ControlRequest, id: String, now: Date? = nil) throws {
        try write(kind.rawValue, id: id, now: now ?? clock.wall())
    }

    // MARK: Resume acknowledgements

    /// `control/<id>.resume`: left by a `resume` that waits for a dispatcher to act on it. It is
    /// no request (a resume is the pause file's removal): a dispatcher removes it once it has
    /// looked at the spool again after the resume, and that removal is the acknowledgement.
    static let resumeMarker = "resume"

    /// Writes the marker of a resume of `id` (after its pause file is gone).
    public func writeResumeMarker(id: String) throws {
        try write(Self.resumeMarker, id: id, now: clock.wall())
    }

    public func resumeMarkerURL(_ id: String) -> URL {
        directory.appendingPathComponent("\(id).\(Self.resumeMarker)")
    }

    /// Ids with a resume marker waiting for a dispatcher.
    public func resumeMarkers() -> [String] {
        let suffix = ".\(Self.resumeMarker)"
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { !$0.hasPrefix(".") && $0.hasSuffix(suffix) }.map { String($0.dropLast(suffix.count)) }
    }

    /// Acknowledges (removes) the resume marker of `id`.
    public func acknowledgeResume(_ id: String) {
        unlink(resumeMarkerURL(id).path)
    }

    private func write(_ kind: String, id: String, now: Date) throws {
        let line = #"{"request":"\#(kind)","id":"\#(id)","requested_at":"\#(Timestamp.rfc3339(now))"}"# + "\n"
        let target = directory.appendingPathComponent("\(id).\(kind)")
        do {
            try DurableFile().write(Array(line.utf8), to: target, temporary: DurableFile.temporary(for: target), mode: 0o660, syncFolder: false)
        } catch {
            throw SpoolError("cannot write \(target.path): \(error)")
        }
    }
}

extension JobDecision.Control {
    /// The request in force as the decision's input (no request, or a resume: `.none`).
    init(_ request: ControlRequest?) {
        switch request {
        case .cancel?: self = .cancel
        case .pause?: self = .pause
        case nil: self = .none
        }
    }
}
