import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `.state/owners/<job file name>`: which dispatcher runs a job in `active/` (a
/// `DispatcherRecord` of this process), written when the job is claimed or resumed, removed when
/// it ends here.
///
/// The job file's lock keeps two dispatchers of this host from running one job, but cannot say
/// which dispatcher holds it; `status` reads this record to find that dispatcher's heartbeat
/// (`DispatcherPresence`), and so tells a stalled job from a working one. The records live
/// under `.state/` rather than in `active/` itself, so `active/` holds jobs only.
final class JobOwners: Sendable {
    let records: DispatcherRecordFolder
    /// Its `wall` time, which the records' modification times are compared with.
    private let clock: EngineClock

    init(spool: Spool, clock: EngineClock = .system) {
        records = Self.folder(spool)
        self.clock = clock
        mkdir(records.directory.path, 0o700)
    }

    static func folder(_ spool: Spool) -> DispatcherRecordFolder {
        DispatcherRecordFolder(directory: spool.stateDirectory.appendingPathComponent("owners"))
    }

    /// This process runs job file `name` (in `active/`, its lock held).
    func take(_ name: String) {
        records.replace(name, with: .current())
    }

    /// The job has ended here (done, failed, left for a resume): its record goes.
    func release(_ name: String) {
        if records.read(name)?.isThisProcess ?? false { unlink(records.path(name)) }
    }

    /// Removes records whose job is no longer in `active/` (its dispatcher died after the move,
    /// or it was moved away by hand) and temporary files left by a crash, once a minute old (a
    /// record is written just after its job's move to `active/`, maybe after `active` was listed).
    func sweep(active: Set<String>) {
        let now = clock.wall().timeIntervalSince1970
        for (name, modified) in records.entries() where now - modified > 60 && !active.contains(name) {
            unlink(records.path(name))
        }
    }
}
