import Foundation
import PushspoolCore

enum StatusCommand {
    /// `status`: what is queued where and for how long, what is running and how far it got,
    /// which providers were paused, and the latest failures.
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        let spool = try Runtime(args).spool
        let now = Date()
        var folders: [(String, JSONValue)] = []
        for folder in [Spool.Folder.incoming, .active, .done, .failed] {
            let names = spool.jobs(in: folder)
            let oldest = names.first.flatMap { mtime(spool.url(folder, $0)) }
            folders.append((folder.rawValue, .object([
                ("count", .int(Int64(names.count))),
                ("oldest_age_s", oldest.map { .int(Int64(now.timeIntervalSince($0))) } ?? .null),
            ])))
        }
        var active: [JSONValue] = []
        for name in spool.jobs(in: .active) {
            let id = jobID(spool, .active, name)
            let log = ResultLogContents.read(spool.resultURL(jobID: id))
            let targets = (try? FileIO.readAll(spool.resultURL(jobID: id))).flatMap { bytes -> Int? in
                guard let first = bytes.split(separator: 0x0A).first, let v = try? JSONParser.parse(Array(first)),
                      case .int(let n)? = v["targets"] else { return nil }
                return Int(n)
            }
            active.append(.object([
                ("id", .string(id)), ("file", .string(name)),
                ("finished", .int(Int64(log?.finished.count ?? 0))),
                ("targets", targets.map { .int(Int64($0)) } ?? .null),
            ]))
        }
        var failures: [JSONValue] = []
        for name in spool.jobs(in: .failed).suffix(5).reversed() {
            let id = jobID(spool, .failed, name)
            var error: JSONValue = .null
            if let bytes = try? FileIO.readAll(spool.resultURL(jobID: id)),
               let last = bytes.split(separator: 0x0A).last, let v = try? JSONParser.parse(Array(last)) {
                error = v["error"] ?? .null
            }
            failures.append(.object([("file", .string(name)), ("error", error)]))
        }
        let doc = JSONValue.object([
            ("spool", .string(spool.root.path)),
            ("folders", .object(folders)),
            ("active", .array(active)),
            ("paused_providers", .array(PauseRecord.all(in: spool))),
            ("recent_failures", .array(failures)),
        ])
        if args.has("json") {
            print(doc.encodedString)
            return .ok
        }
        print("spool \(spool.root.path)")
        for (name, v) in folders {
            let count = v["count"].flatMap { if case .int(let n) = $0 { return Int(n) } else { return nil } } ?? 0
            let age = v["oldest_age_s"].flatMap { if case .int(let n) = $0 { return " (oldest \(formatAge(Int(n))))" } else { return nil } } ?? ""
            print("  \(name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(count)\(age)")
        }
        for a in active {
            let t = a["targets"].flatMap { if case .int(let n) = $0 { return "/\(n)" } else { return nil } } ?? ""
            print("  running \(a["id"]?.stringValue ?? "?"): \(a["finished"].map { $0.encodedString } ?? "0")\(t) targets final")
        }
        for p in PauseRecord.all(in: spool) {
            print("  provider \(p["provider"]?.stringValue ?? "?") last paused (10 min) at \(p["at"]?.stringValue ?? "?"): \(p["reason"]?.stringValue ?? "")")
        }
        for f in failures {
            print("  failed \(f["file"]?.stringValue ?? "?"): \(f["error"]?.stringValue ?? "")")
        }
        return .ok
    }

    /// The id a job's result log is named after (its `id`, else its file name).
    static func jobID(_ spool: Spool, _ folder: Spool.Folder, _ name: String) -> String {
        (try? FileIO.readAll(spool.url(folder, name))).flatMap { try? JobParser.parse($0, fileName: name).id }
            ?? JobRunner.fallbackID(for: name)
    }

    static func mtime(_ url: URL) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
    }

    static func formatAge(_ s: Int) -> String {
        s < 120 ? "\(s)s" : s < 7200 ? "\(s / 60)m" : s < 172_800 ? "\(s / 3600)h" : "\(s / 86400)d"
    }
}
