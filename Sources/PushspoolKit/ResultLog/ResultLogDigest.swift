import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the dashboard draws from a job's result log: outcomes per second (from each delivery
/// line's `at`, so a finished campaign keeps its curve), failures grouped by platform, code and
/// reason, and a `local_time` job's waves. Read incrementally: each call reads only what was
/// appended since the last (a million-line log is read once, not every two seconds).
public struct ResultLogDigest: Sendable {
    /// Outcomes that did not deliver: `failed`, or `unregistered` (the device is gone).
    public struct FailureKey: Sendable, Hashable {
        public var platform: String
        public var status: String
        public var code: String
        public var reason: String
    }

    public struct Second: Sendable {
        public var delivered = 0, failed = 0, unregistered = 0
    }

    /// Outcomes per whole second since 1970.
    public var seconds: [Int: Second] = [:]
    public var failures: [FailureKey: Int] = [:]
    public var waves: [ResultRecord.WaveLine] = []
    public var summary: ResultRecord.Summary?
    public var targets: Int?
    /// Bytes read so far (whole lines only).
    var offset: Int64 = 0
    var inode: UInt64 = 0

    /// Reasons are cut to this length, so a provider's long answers group and stay small.
    static let reasonLength = 160
    /// At most this many distinct failure groups are kept (the rest are counted as `other`).
    static let maxGroups = 200

    public init() {}

    /// Reads what `url` gained since the last call (from the start when the file was replaced).
    mutating func advance(_ url: URL) {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        if UInt64(st.st_ino) != inode || Int64(st.st_size) < offset { self = ResultLogDigest(); inode = UInt64(st.st_ino) }
        guard Int64(st.st_size) > offset else { return }
        var position = offset
        var carry: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(position)) }
            if n <= 0 { break }
            position += Int64(n)
            var start = 0
            let chunk = buffer[0..<n]
            while let nl = chunk[start...].firstIndex(of: 0x0A) {
                if carry.isEmpty {
                    take(chunk[start..<nl])
                } else {
                    carry.append(contentsOf: chunk[start..<nl])
                    take(carry[...])
                    carry.removeAll(keepingCapacity: true)
                }
                start = nl + 1
            }
            carry.append(contentsOf: chunk[start...])
            offset = position - Int64(carry.count)
        }
        // A line still being written is read next time, whole.
    }

    private mutating func take(_ line: ArraySlice<UInt8>) {
        guard let record = ResultRecord(line: line) else { return }
        switch record {
        case .delivery(let d):
            let second = d.at.flatMap(Timestamp.parse).map { Int($0.timeIntervalSince1970) } ?? 0
            switch d.status {
            case .delivered: seconds[second, default: Second()].delivered += 1
            case .unregistered, .failed:
                if d.status == .failed { seconds[second, default: Second()].failed += 1 } else { seconds[second, default: Second()].unregistered += 1 }
                var key = FailureKey(platform: d.platform.rawValue, status: d.status.rawValue, code: d.code ?? "",
                                     reason: String((d.reason ?? "").prefix(Self.reasonLength)))
                if failures[key] == nil && failures.count >= Self.maxGroups {
                    key = FailureKey(platform: key.platform, status: key.status, code: "other", reason: "")
                }
                failures[key, default: 0] += 1
            case .capped: break
            }
        case .job(let j): targets = j.targets
        case .wave(let w): waves.append(w)
        case .summary(let s): summary = s
        default: break
        }
    }

    /// Outcomes over time in at most `points` buckets of a whole number of seconds: `(start, bucket seconds, counts)`.
    public func series(points: Int = 120) -> (start: Int, step: Int, buckets: [Second]) {
        let known = seconds.keys.filter { $0 > 0 }
        guard let first = known.min(), let last = known.max() else { return (0, 1, []) }
        let span = last - first + 1
        let steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400]
        let step = steps.first { span / $0 < points } ?? 86400
        let start = first - first % step
        var buckets = [Second](repeating: Second(), count: (last - start) / step + 1)
        for (t, s) in seconds where t > 0 {
            let i = (t - start) / step
            buckets[i].delivered += s.delivered
            buckets[i].failed += s.failed
            buckets[i].unregistered += s.unregistered
        }
        return (start, step, buckets)
    }
}
