import Foundation
import PushspoolCore

/// A `local_time` job's next wave while it waits in `active/` between waves (a few bytes beside
/// its progress checkpoint, `results/.<id>.next-wave`), for `status` and `GET /v1/jobs/{id}`.
struct NextWave: Sendable, Equatable {
    /// RFC 3339.
    var at: String
    var devices: Int

    static func url(in spool: Spool, jobID: String) -> URL {
        spool.url(.results).appendingPathComponent(".\(spool.firstGivenID(jobID)).next-wave")
    }

    func write(to url: URL) {
        var w = JSONLineWriter(capacity: 64)
        w.field("at", at)
        w.field("devices", devices)
        try? Data(w.line()).write(to: url, options: .atomic)
    }

    static func read(_ url: URL) -> NextWave? {
        guard let data = FileManager.default.contents(atPath: url.path), let v = try? JSONParser.parse(Array(data)),
              let at = v["at"]?.stringValue, case .int(let n)? = v["devices"] else { return nil }
        return NextWave(at: at, devices: Int(n))
    }

    var json: JSONValue { .object([("at", .string(at)), ("devices", .int(Int64(devices)))]) }
}
