import Foundation
import PushspoolCore

/// The `summary` line a finished result log ends with, read from the log's tail only: `submit`
/// asks it of every job id, and a million-device log is a hundred megabytes.
public enum ResultLogSummary {
    /// The summary's `status` (`done`, `cancelled`, `failed`), or nil when the log is missing or
    /// has none yet (the job is running, or was interrupted).
    public static func status(_ url: URL) -> String? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() }
        guard let size = try? handle.seekToEnd(), size > 0 else { return nil }
        // A summary line is a few hundred bytes (its error is capped); 64 KiB holds it.
        let start = size > 65_536 ? size - 65_536 : 0
        guard (try? handle.seek(toOffset: start)) != nil, let tail = try? handle.readToEnd() else { return nil }
        let lines = tail.split(separator: 0x0A)
        guard let last = lines.last, let v = try? JSONParser.parse(Array(last)),
              v["type"]?.stringValue == "summary" else { return nil }
        return v["status"]?.stringValue
    }
}
