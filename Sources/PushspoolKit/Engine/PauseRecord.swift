import Foundation
import PushspoolCore

/// `.state/paused-<provider>.json`: the last time a provider was paused and why, for `status`.
package enum PauseRecord {
    /// `at` is `clock`'s wall time.
    static func write(provider: String, reason: String, in spool: Spool, clock: EngineClock) {
        let doc = JSONValue.object([("provider", .string(provider)), ("reason", .string(reason)),
                                    ("at", .string(Timestamp.rfc3339(clock.wall())))])
        let url = spool.stateDirectory.appendingPathComponent("paused-\(provider).json")
        try? FileIO.writeDurably(doc.encoded(), to: url, mode: 0o640)
    }

    package static func all(in spool: Spool) -> [JSONValue] {
        let dir = spool.stateDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasPrefix("paused-") && $0.hasSuffix(".json") }.sorted().compactMap {
            (try? FileIO.readAll(dir.appendingPathComponent($0))).flatMap { try? JSONParser.parse($0) }
        }
    }
}
