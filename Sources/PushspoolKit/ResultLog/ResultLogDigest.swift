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
/// reason, a `local_time` job's waves, and the outcomes per app and platform the funnel starts
/// from (`RegistryNotificationDesk`). Read incrementally: each call reads only what was
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
    /// Final outcomes per app and platform, counted as `ResultLogContents` counts them: the
    /// funnel's first steps (sent, delivered) read here, incrementally, not from the whole log.
    public var deliveries = DeliveryTally()
    /// Whether the log was found (else the digest is empty).
    public var found: Bool { inode != 0 }
    /// Bytes read so far (whole lines only).
    var offset: Int64 = 0
    var inode: UInt64 = 0
    /// The first 19 bytes (`YYYY-MM-DDTHH:MM:SS`) of the last `at` parsed, and its second.
    private var lastSecondPrefix: [UInt8] = []
    private var lastSecond = 0
    /// The last app named, as bytes and as its name.
    private var lastApp: (bytes: [UInt8], name: String) = ([], "")
    /// Outcomes of the second being read, not yet in `seconds`.
    private var pendingSecond: (at: Int, counts: Second) = (0, Second())

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
        flushSecond()
        // A line still being written is read next time, whole.
    }

    private mutating func take(_ line: ArraySlice<UInt8>) {
        // A delivery line (nearly every line) from its bytes; the others, and any line whose
        // fields need decoding, parsed whole.
        if line.starts(with: Self.deliveryStart), line.withUnsafeBufferPointer({ takeDelivery($0) }) { return }
        guard let record = ResultRecord(line: line) else { return }
        switch record {
        case .delivery(let d):
            count(platform: d.platform, app: d.app, status: d.status, second: second(of: d.at), code: d.code, reason: d.reason)
        case .job(let j):
            targets = j.targets
            deliveries.targets = j.targets
        case .wave(let w): waves.append(w)
        case .summary(let s): summary = s
        default: break
        }
    }

    private mutating func flushSecond() {
        let p = pendingSecond.counts
        guard p.delivered + p.failed + p.unregistered > 0 else { return }
        seconds[pendingSecond.at, default: Second()].delivered += p.delivered
        seconds[pendingSecond.at, default: Second()].failed += p.failed
        seconds[pendingSecond.at, default: Second()].unregistered += p.unregistered
        pendingSecond.counts = Second()
    }

    private static let deliveryStart = Array(#"{"type":"delivery","#.utf8)
    private static let statuses = [DeliveryStatus.delivered, .failed, .unregistered, .capped].map { (bytes: Array($0.rawValue.utf8), status: $0) }
    private static let platforms = Platform.allCases.map { (bytes: Array($0.rawValue.utf8), platform: $0) }

    private static func same(_ p: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ bytes: [UInt8]) -> Bool {
        r.count == bytes.count && bytes.withUnsafeBufferPointer { b in (0..<b.count).allSatisfy { p[r.lowerBound + $0] == b[$0] } }
    }

    /// One outcome: in its second, its route's tally, and (not delivered) its reason's group.
    private mutating func count(platform: Platform, app: String?, status: DeliveryStatus, second: Int, code: String?, reason: String?) {
        deliveries.count(app: app, platform: platform, status: status)
        // Lines of one second follow each other: counted here, put in `seconds` when the second changes.
        if second != pendingSecond.at { flushSecond(); pendingSecond.at = second }
        switch status {
        case .delivered: pendingSecond.counts.delivered += 1
        case .unregistered, .failed:
            if status == .failed { pendingSecond.counts.failed += 1 } else { pendingSecond.counts.unregistered += 1 }
            var key = FailureKey(platform: platform.rawValue, status: status.rawValue, code: code ?? "",
                                 reason: String((reason ?? "").prefix(Self.reasonLength)))
            if failures[key] == nil && failures.count >= Self.maxGroups {
                key = FailureKey(platform: key.platform, status: key.status, code: "other", reason: "")
            }
            failures[key, default: 0] += 1
        case .capped: break
        }
    }

    /// A delivery line read from its bytes (`FlatJSONMembers`); false: parse it whole (a field
    /// with an escape, or not as `ResultRecord.Delivery` writes it).
    private mutating func takeDelivery(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        var platform: Platform?, status: DeliveryStatus?, app: String?, code: String?, reason: String?
        var at: Range<Int>?
        var readable = true
        func text(_ r: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: p[r]), as: UTF8.self) }
        let scanned = FlatJSONMembers.scan(p) { key, value in
            let name = FlatJSONMembers.equals
            switch value {
            case .string(let r):
                if name(p, key, "status") { status = Self.statuses.first { Self.same(p, r, $0.bytes) }?.status }
                else if name(p, key, "platform") { platform = Self.platforms.first { Self.same(p, r, $0.bytes) }?.platform }
                else if name(p, key, "at") { at = r }
                else if name(p, key, "app") {
                    // Lines of one app follow each other: its name made once.
                    if !Self.same(p, r, lastApp.bytes) { lastApp = (Array(p[r]), text(r)) }
                    app = lastApp.name
                }
                else if name(p, key, "code") { code = text(r) }
                else if name(p, key, "reason") { reason = text(r) }
            case .escapedString:
                if name(p, key, "status") || name(p, key, "platform") || name(p, key, "at") || name(p, key, "app")
                    || name(p, key, "code") || name(p, key, "reason") { readable = false }
            default: break
            }
        }
        guard scanned, readable, let platform, let status else { return false }
        count(platform: platform, app: app, status: status, second: at.map { secondOf(p, $0) } ?? 0, code: code, reason: reason)
        return true
    }

    /// The whole second of an RFC 3339 time (0: none, or not one). Lines of one second share
    /// their first 19 bytes: those are compared with the last line's before anything is parsed.
    private mutating func secondOf(_ p: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Int {
        if r.count == 24, p[r.upperBound - 1] == UInt8(ascii: "Z"), lastSecondPrefix.count == 19,
           lastSecondPrefix.withUnsafeBufferPointer({ last in (0..<19).allSatisfy { last[$0] == p[r.lowerBound + $0] } }) {
            return lastSecond
        }
        let s = second(of: String(decoding: UnsafeBufferPointer(rebasing: p[r]), as: UTF8.self))
        if r.count == 24, p[r.upperBound - 1] == UInt8(ascii: "Z") {
            lastSecondPrefix = Array(p[r.lowerBound..<r.lowerBound + 19])
            lastSecond = s
        }
        return s
    }

    private func second(of at: String?) -> Int { at.flatMap(Timestamp.parse).map { Int($0.timeIntervalSince1970) } ?? 0 }

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
