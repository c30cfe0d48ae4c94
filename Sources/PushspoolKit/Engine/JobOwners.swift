import Dispatch
import Foundation
import Synchronization

/// The owner records (`OwnerRecord`) of the jobs this process runs: written when a job is
/// claimed or resumed, refreshed every `heartbeatInterval` while it runs, removed when it ends.
///
/// Taking an orphan (a job in `active/` whose lock was free): a record from another host with a
/// heartbeat younger than `lease` means its owner may be alive where the lock cannot be seen (NFS):
/// the job is left alone. A record from this host means nothing more than the free lock already
/// said (its owner is gone), and one older than the lease has expired: it is taken away
/// atomically (`OwnerRecordFolder.remove(_:ifStill:)`) and a record of this process is created
/// only if none appeared meanwhile, so of two hosts taking over at once one wins.
///
/// An owner whose heartbeat came too late (a host stalled longer than the lease) finds another
/// process's record at its next beat: its ownership is lost (`isLost`) and the job stops producing
/// targets, so two dispatchers never go on sending one job. Hosts' clocks must agree (NTP) to
/// well within the lease.
final class JobOwners: Sendable {
    /// Default `owner_lease_seconds`.
    static let defaultLease = 60.0

    let records: OwnerRecordFolder
    let lease: Double
    /// A few beats fit in a lease, so one late write does not lose the job.
    var heartbeatInterval: Double { min(5, lease / 4) }

    private let owned = Mutex<[String: Ownership]>([:])
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    init(spool: Spool, lease: Double = JobOwners.defaultLease) {
        records = OwnerRecordFolder(spool: spool)
        self.lease = lease
        mkdir(records.directory.path, 0o700)
    }

    deinit { timer.withLock { $0?.cancel() } }

    /// One job this process runs.
    final class Ownership: Sendable {
        let name: String
        private struct State { var ended = false; var lostTo: String? }
        private let state = Mutex(State())
        /// Asked before every target: an atomic load, not a lock.
        private let lost = Atomic<Bool>(false)
        /// Where its record is, and which file was there when `confirm` last found it this process's.
        fileprivate let recordPath: String
        fileprivate let confirmed = Mutex<FileIO.Version?>(nil)

        init(name: String, recordPath: String) {
            self.name = name
            self.recordPath = recordPath
        }

        /// Whether another dispatcher took the job over from this one.
        var isLost: Bool { lost.load(ordering: .acquiring) }
        /// The host of that dispatcher.
        var lostTo: String? { state.withLock { $0.lostTo } }

        /// Runs `body` unless the ownership ended or was lost; `body` may mark it lost (to a host).
        fileprivate func ifCurrent(_ body: () -> String?) {
            state.withLock { s in
                guard !s.ended, s.lostTo == nil else { return }
                s.lostTo = body()
                if s.lostTo != nil { lost.store(true, ordering: .releasing) }
            }
        }

        fileprivate func end(_ body: () -> Void) {
            state.withLock { s in
                guard !s.ended else { return }
                s.ended = true
                if s.lostTo == nil { body() }
            }
        }
    }

    /// Takes job file `name` (in `active/`, its lock held) for this process. A claim from
    /// `incoming/` always gets it (whatever record is there is left over); an orphan does not while
    /// a dispatcher on another host keeps its record fresh (the failure carries that record).
    func take(_ name: String, origin: JobRunner.Origin) -> Result<Ownership, OwnerRecordHeld> {
        let mine = OwnerRecord.current()
        if origin == .incoming {
            records.replace(name, with: mine)
            return .success(own(name))
        }
        for _ in 0..<3 {
            guard let found = records.read(name) else {
                if records.create(name, with: mine) { return .success(own(name)) }
                continue                                     // one appeared meanwhile: look at it
            }
            if let other = found.record, other.isLiveElsewhere(lease: lease) {
                return .failure(OwnerRecordHeld(record: other))
            }
            guard records.remove(name, ifStill: found.bytes, by: mine.instance) else { continue }
            if records.create(name, with: mine) { return .success(own(name)) }
        }
        return .failure(OwnerRecordHeld(record: records.read(name)?.record))
    }

    /// The job has ended here (done, failed, left for a resume): its record goes, unless another
    /// process's has replaced it.
    func release(_ ownership: Ownership) {
        owned.withLock { _ = $0.removeValue(forKey: ownership.name) }
        ownership.end {
            if records.read(ownership.name)?.record?.isThisProcess ?? false { unlink(records.path(ownership.name)) }
        }
    }

    /// Removes records whose job is no longer in `active/` (moved away by hand, or its owner
    /// died after the move) once their heartbeat is older than the lease, and temporary files
    /// left by a crash.
    func sweep(active: Set<String>) {
        let now = Date()
        for (name, modified) in records.entries() where now.timeIntervalSince1970 - modified > lease {
            if name.hasPrefix(".") {
                unlink(records.path(name))
            } else if !active.contains(name), let found = records.read(name),
                      (found.record.map { now.timeIntervalSince($0.heartbeat) > lease } ?? true) {
                _ = records.remove(name, ifStill: found.bytes)
            }
        }
    }

    private func own(_ name: String) -> Ownership {
        let ownership = Ownership(name: name, recordPath: records.path(name))
        owned.withLock { $0[name] = ownership }
        startHeartbeat()
        return ownership
    }

    /// Reads the job's record again between heartbeats: the owner asks before each batch of
    /// targets (`SendRun.ownershipBatch`), so that where the job file's lock does nothing (a
    /// filesystem without working locks) a dispatcher that took the job over stops this one
    /// within a batch, not a heartbeat. One `stat` per batch: the record is read only when it is
    /// not the very file (inode, size, modification time) last found to be this process's, as
    /// after each heartbeat's rewrite or a takeover.
    func confirm(_ ownership: Ownership) {
        ownership.ifCurrent {
            let version = FileIO.version(ownership.recordPath)
            if let version, ownership.confirmed.withLock({ $0 == version }) { return nil }
            guard let bytes = records.readBytes(ownership.name), let record = OwnerRecord(bytes) else { return nil }
            guard record.isThisProcess else { return record.host }
            ownership.confirmed.withLock { $0 = version }
            return nil
        }
    }

    /// Rewrites each owned job's record; one that holds another process's record now is lost.
    private func beat() {
        for ownership in owned.withLock({ Array($0.values) }) {
            ownership.ifCurrent {
                let found = records.read(ownership.name)
                if let other = found?.record, !other.isThisProcess { return other.host }
                records.replace(ownership.name, with: .current())
                return nil
            }
        }
    }

    private func startHeartbeat() {
        timer.withLock { t in
            guard t == nil else { return }
            let source = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            source.schedule(deadline: .now() + heartbeatInterval, repeating: heartbeatInterval, leeway: .milliseconds(100))
            source.setEventHandler { [weak self] in self?.beat() }
            source.resume()
            t = source
        }
    }
}

/// A live dispatcher on another host owns the job (its record, nil if it could not be read).
struct OwnerRecordHeld: Error {
    var record: OwnerRecord?
}
