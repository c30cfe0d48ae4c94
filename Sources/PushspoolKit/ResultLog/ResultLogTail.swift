import Foundation
import PushspoolCore

/// The two ends of a result log that `status`, `submit` and job steering need, read without
/// reading what lies between (a million-device job's log is about 200 MB).
package enum ResultLogTail {
    /// The summary line, if the log has ended: the last line, found in the last 64 KiB.
    package static func summary(_ url: URL) -> ResultRecord.Summary? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() }
        guard let size = try? handle.seekToEnd(), size > 0 else { return nil }
        try? handle.seek(toOffset: size > 65536 ? size - 65536 : 0)
        guard let data = try? handle.readToEnd() else { return nil }
        for line in data.split(separator: 0x0A).reversed() {
            guard let v = try? JSONParser.parse(Array(line)) else { continue }
            if case .summary(let s)? = ResultRecord(json: v) { return s }
            return nil
        }
        return nil
    }

    /// The job file's name from the job line (the first line).
    package static func jobFile(_ url: URL) -> String? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 16384), let nl = data.firstIndex(of: 0x0A),
              case .job(let j)? = ResultRecord(line: data[..<nl]) else { return nil }
        return j.file
    }
}
