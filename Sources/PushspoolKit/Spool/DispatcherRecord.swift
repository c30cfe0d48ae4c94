import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A dispatcher process as a small file of the spool's `.state/` names it: its pid, a random id
/// of the process and a time. `DispatcherPresence` keeps one per running dispatcher, its time
/// the heartbeat, with its providers' connections and recent errors; `JobOwners` one per running
/// job, naming the dispatcher that runs it.
package struct DispatcherRecord: Equatable, Sendable {
    var pid: Int32
    /// Random per process: tells this process from an earlier one that had the same pid.
    var instance: String
    var heartbeat: Date
    /// Its providers as it reported them at this heartbeat (a presence record's; empty in a job's).
    var providers: [ProviderRuntime] = []

    /// This process, now.
    static func current(providers: [ProviderRuntime] = []) -> DispatcherRecord {
        var record = DispatcherRecord(pid: getpid(), instance: instance, heartbeat: Date())
        record.providers = providers
        return record
    }

    var isThisProcess: Bool { instance == Self.instance }

    static let instance = UUID().uuidString.lowercased()

    func encoded() -> [UInt8] {
        var fields: [(String, JSONValue)] = [("pid", .int(Int64(pid))), ("instance", .string(instance)),
                                             ("heartbeat_at", .string(Timestamp.rfc3339(heartbeat)))]
        if !providers.isEmpty { fields.append(("providers", .array(providers.map { $0.json() }))) }
        return JSONValue.object(fields).encoded()
    }

    init(pid: Int32, instance: String, heartbeat: Date) {
        self.pid = pid
        self.instance = instance
        self.heartbeat = heartbeat
    }

    /// Parses a record; other keys (`host`, written by earlier releases) are ignored.
    init?(_ bytes: [UInt8]) {
        guard let v = try? JSONParser.parse(bytes), case .int(let pid)? = v["pid"], let instance = v["instance"]?.stringValue,
              let heartbeat = v["heartbeat_at"]?.stringValue.flatMap(Timestamp.parse) else { return nil }
        self.init(pid: Int32(truncatingIfNeeded: pid), instance: instance, heartbeat: heartbeat)
        if case .array(let items)? = v["providers"] { providers = items.compactMap { ProviderRuntime(json: $0) } }
    }
}

/// A folder of such records.
struct DispatcherRecordFolder: Sendable {
    let directory: URL

    init(directory: URL) {
        self.directory = directory
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The record `name`, or nil when there is none or it cannot be read.
    func read(_ name: String) -> DispatcherRecord? {
        (try? FileIO.readAll(URL(fileURLWithPath: path(name)), limit: Self.maxRecordBytes)).flatMap(DispatcherRecord.init)
    }

    /// A record with a few providers' 20 recent errors each is some kilobytes; this bounds a
    /// corrupt or hostile one.
    static let maxRecordBytes = 256 * 1024

    /// Writes `record` over whatever record `name` has (temporary file + rename, so a reader
    /// sees the old record or the new one). Not fsynced: a record lost in a crash names a
    /// process that is gone anyway.
    @discardableResult
    func replace(_ name: String, with record: DispatcherRecord) -> Bool {
        let tmp = path(".\(Self.key(name)).\(record.instance).tmp")
        var fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o640)
        if fd < 0, errno == ENOENT {             // the folder was removed: make it again
            mkdir(directory.path, 0o700)
            fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o640)
        }
        guard fd >= 0 else { return false }
        let written = (try? FileIO.writeAll(fd, record.encoded())) != nil
        if close(fd) == 0, written, rename(tmp, path(name)) == 0 { return true }
        unlink(tmp)
        return false
    }

    /// Names of records (and of temporary files, which start with "."), with their modification times.
    func entries() -> [(name: String, modified: Double)] {
        (SpoolName.list(directory.path) ?? []).compactMap(\.text).compactMap { name in
            FileIO.modificationTime(path(name)).map { (name, $0) }
        }
    }

    /// A short stand-in for a job file name in temporary names (a job name may be 255 bytes long).
    private static func key(_ name: String) -> String { String(SpoolName.fnv1a(name.utf8), radix: 16) }
}
