import CSystem
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `.state/owners/<job file name>`: which dispatcher runs a job in `active/`.
///
/// The job file's lock tells a live owner from a dead one on one host, but locks do not reliably
/// reach across hosts that share a spool over NFS. So while a job runs its owner also keeps this
/// record — host name, pid, a random id of its process and a heartbeat time — rewritten every few
/// seconds (`JobOwners`). The records live under `.state/` rather than in `active/` itself, so
/// `active/` holds jobs only, as every tool listing it expects.
///
/// Every change is atomic on NFS too: a record is replaced by writing a temporary file and
/// renaming it over the record; a first record is created with `link(2)` (fails if one exists);
/// a stale record is taken away by renaming it to a name of the taker's own, which only one
/// taker can win.
package struct OwnerRecord: Equatable, Sendable {
    var host: String
    var pid: Int32
    /// Random per process: tells this process from an earlier one that had the same pid.
    var instance: String
    var heartbeat: Date

    /// This process, now.
    static func current() -> OwnerRecord {
        OwnerRecord(host: hostName, pid: getpid(), instance: instance, heartbeat: Date())
    }

    var isThisProcess: Bool { instance == Self.instance && host == Self.hostName }

    /// Whether a dispatcher on another host may be running the job: its heartbeat is younger
    /// than `lease` (a heartbeat ahead of this host's clock counts as fresh).
    func isLiveElsewhere(lease: Double, now: Date = Date()) -> Bool {
        host != Self.hostName && now.timeIntervalSince(heartbeat) < lease
    }

    /// This host's name: `PUSHSPOOL_HOSTNAME` when set (tests run two "hosts" on one machine;
    /// operators of cloned machines that share one name), else `gethostname`.
    package static let hostName: String = {
        if let name = ProcessInfo.processInfo.environment["PUSHSPOOL_HOSTNAME"], !name.isEmpty { return name }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown-host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }()

    static let instance = UUID().uuidString.lowercased()

    func encoded() -> [UInt8] {
        JSONValue.object([("host", .string(host)), ("pid", .int(Int64(pid))), ("instance", .string(instance)),
                          ("heartbeat_at", .string(Timestamp.rfc3339(heartbeat)))]).encoded()
    }

    init(host: String, pid: Int32, instance: String, heartbeat: Date) {
        self.host = host
        self.pid = pid
        self.instance = instance
        self.heartbeat = heartbeat
    }

    init?(_ bytes: [UInt8]) {
        guard let v = try? JSONParser.parse(bytes), let host = v["host"]?.stringValue,
              case .int(let pid)? = v["pid"], let instance = v["instance"]?.stringValue,
              let heartbeat = v["heartbeat_at"]?.stringValue.flatMap(Timestamp.parse) else { return nil }
        self.init(host: host, pid: Int32(truncatingIfNeeded: pid), instance: instance, heartbeat: heartbeat)
    }
}

/// The folder of owner records and the atomic steps on them.
struct OwnerRecordFolder: Sendable {
    let directory: URL

    init(spool: Spool) {
        self.init(directory: spool.stateDirectory.appendingPathComponent("owners"))
    }

    /// Another folder of such records (`DispatcherPresence`: one per running dispatcher).
    init(directory: URL) {
        self.directory = directory
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The record of job file `name` as stored (bytes) and read (nil when unreadable), or nil when there is none.
    func read(_ name: String) -> (bytes: [UInt8], record: OwnerRecord?)? {
        readFile(path(name))
    }

    /// Writes `record` over whatever record `name` has (temporary file + rename).
    @discardableResult
    func replace(_ name: String, with record: OwnerRecord) -> Bool {
        guard let tmp = writeTemporary(name, record) else { return false }
        if rename(tmp, path(name)) == 0 { return true }
        unlink(tmp)
        return false
    }

    /// Creates the record of `name` only if it has none (`link(2)`: atomic on NFS; a retried
    /// link that the server had already made is told by the temporary file's link count).
    func create(_ name: String, with record: OwnerRecord) -> Bool {
        guard let tmp = writeTemporary(name, record) else { return false }
        defer { unlink(tmp) }
        if link(tmp, path(name)) == 0 { return true }
        var st = stat()
        return errno != EEXIST && stat(tmp, &st) == 0 && st.st_nlink == 2
    }

    /// Takes the record of `name` away if it still is `expected` (the bytes that were judged
    /// stale): it is renamed to a name of the taker's own (`instance`), which only one taker can
    /// win, and compared; a newer record caught instead is put back. True when `expected` was removed.
    func remove(_ name: String, ifStill expected: [UInt8], by instance: String = OwnerRecord.instance) -> Bool {
        let caught = path(".\(Self.key(name)).\(instance).taken")
        guard rename(path(name), caught) == 0 else { return false }
        if readFile(caught)?.bytes == expected {
            unlink(caught)
            return true
        }
        if csystem_rename_noreplace(caught, path(name)) != 0 { unlink(caught) }   // its owner already wrote a new one
        return false
    }

    /// Names of records (not the temporary files) and of temporary files, with their modification times.
    func entries() -> [(name: String, modified: Double)] {
        (SpoolName.list(directory.path) ?? []).compactMap(\.text).compactMap { name in
            FileIO.modificationTime(path(name)).map { (name, $0) }
        }
    }

    /// Not fsynced: other hosts see it once it is closed (NFS close-to-open), and a record lost
    /// in a crash only lets the job be taken over sooner, which a crash calls for anyway.
    private func writeTemporary(_ name: String, _ record: OwnerRecord) -> String? {
        let tmp = path(".\(Self.key(name)).\(record.instance).tmp")
        var fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o640)
        if fd < 0, errno == ENOENT {             // the folder was removed: make it again
            mkdir(directory.path, 0o700)
            fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o640)
        }
        guard fd >= 0 else { return nil }
        let written = (try? FileIO.writeAll(fd, record.encoded())) != nil
        if close(fd) == 0, written { return tmp }
        unlink(tmp)
        return nil
    }

    private func readFile(_ path: String) -> (bytes: [UInt8], record: OwnerRecord?)? {
        guard let bytes = readBytes(atPath: path) else { return nil }
        return (bytes, OwnerRecord(bytes))
    }

    /// The record of `name` as it is on disk, unparsed.
    func readBytes(_ name: String) -> [UInt8]? { readBytes(atPath: path(name)) }

    private func readBytes(atPath path: String) -> [UInt8]? {
        try? FileIO.readAll(URL(fileURLWithPath: path), limit: 4096)
    }

    /// A short stand-in for a job file name in temporary names (a job name may be 255 bytes long).
    private static func key(_ name: String) -> String { String(SpoolName.fnv1a(name.utf8), radix: 16) }
}
