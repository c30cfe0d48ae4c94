import Foundation

/// What the harnesses that run the real binary on a spool in a temporary folder share
/// (`APNsSpool` against the fake APNs, `PushCloudHarness` against the fakes of several services):
/// dropping a job the way writers must and reading back what the dispatcher logged.
protocol SpoolHarness: AnyObject {
    /// The temporary folder; the spool is its `spool/`.
    var dir: TempDir { get }
}

extension SpoolHarness {
    /// Drops a job into `incoming/`, written in `tmp/` and renamed, as writers must.
    func drop(_ id: String, _ json: String) {
        dir.write("spool/tmp/\(id).json", json)
        rename(dir.path("spool/tmp/\(id).json"), dir.path("spool/incoming/\(id).json"))
    }

    /// The job's result log, one object per line.
    func results(_ id: String) -> [[String: Any]] { dir.jsonLines("spool/results/\(id).jsonl") }

    /// Device id → its delivery line.
    func deliveries(_ id: String) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for line in results(id) where line["type"] as? String == "delivery" {
            if let device = line["device"] as? String { out[device] = line }
        }
        return out
    }

    func summary(_ id: String) -> [String: Any]? { results(id).last { $0["type"] as? String == "summary" } }

    /// The ids in `pushspool devices` output (one JSON object per line).
    static func deviceIDs(listed output: String) -> Set<String> {
        Set(output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        })
    }
}
