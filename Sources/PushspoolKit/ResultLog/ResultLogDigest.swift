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
    /// Outcomes per route of the lines being read, not yet in `deliveries`.
    private var pendingRoutes: [(app: String?, platform: Platform, counts: DeliveryTally.Counts)] = []

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
            buffer.withUnsafeBufferPointer { chunk in
                let base = chunk.baseAddress!
                var start = 0
                // memchr finds each line's end (vectorised): the lines themselves are read once.
                while start < n, let hit = memchr(base + start, 0x0A, n - start) {
                    let nl = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if carry.isEmpty {
                        take(UnsafeBufferPointer(rebasing: chunk[start..<nl]))
                    } else {
                        carry.append(contentsOf: chunk[start..<nl])
                        carry.withUnsafeBufferPointer { take($0) }
                        carry.removeAll(keepingCapacity: true)
                    }
                    start = nl + 1
                }
                carry.append(contentsOf: chunk[start..<n])
            }
            offset = position - Int64(carry.count)
        }
        flushSecond()
        flushRoutes()
        // A line still being written is read next time, whole.
    }

    private mutating func take(_ line: UnsafeBufferPointer<UInt8>) {
        // A delivery line (nearly every line) from its bytes: as the writer lays it out, else
        // member by member; the others, and any line whose fields need decoding, parsed whole.
        if line.count > Self.deliveryStart.count, Self.matches(line, at: 0, Self.deliveryStart), takeWritten(line) || takeDelivery(line) { return }
        guard let record = ResultRecord(line: line) else { return }
        switch record {
        case .delivery(let d):
            count(platform: d.platform, app: d.app, status: d.status, second: second(of: d.at)) { (d.code, d.reason) }
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

    /// Whether `bytes` are at `i` in `p` (the caller made sure `p` is long enough).
    private static func matches(_ p: UnsafeBufferPointer<UInt8>, at i: Int, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { b in memcmp(p.baseAddress! + i, b.baseAddress!, b.count) == 0 }
    }

    private static func same(_ p: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ bytes: [UInt8]) -> Bool {
        r.count == bytes.count && bytes.withUnsafeBufferPointer { b in (0..<b.count).allSatisfy { p[r.lowerBound + $0] == b[$0] } }
    }

    /// One outcome: in its second, its route's tally, and (not delivered) its reason's group.
    /// `failure` gives the code and reason, made only for an outcome that did not deliver.
    private mutating func count(platform: Platform, app: String?, status: DeliveryStatus, second: Int,
                                failure: () -> (code: String?, reason: String?)) {
        countRoute(app: app, platform: platform, status: status)
        // Lines of one second follow each other: counted here, put in `seconds` when the second changes.
        if second != pendingSecond.at { flushSecond(); pendingSecond.at = second }
        switch status {
        case .delivered: pendingSecond.counts.delivered += 1
        case .unregistered, .failed:
            if status == .failed { pendingSecond.counts.failed += 1 } else { pendingSecond.counts.unregistered += 1 }
            let (code, reason) = failure()
            var key = FailureKey(platform: platform.rawValue, status: status.rawValue, code: code ?? "",
                                 reason: String((reason ?? "").prefix(Self.reasonLength)))
            if failures[key] == nil && failures.count >= Self.maxGroups {
                key = FailureKey(platform: key.platform, status: key.status, code: "other", reason: "")
            }
            failures[key, default: 0] += 1
        case .capped: break
        }
    }

    /// Counted in the few routes of the lines being read (a broadcast's platforms interleave,
    /// its app is one `String` made once): `deliveries` gets them when the read ends, not a
    /// hashed look-up per line.
    private mutating func countRoute(app: String?, platform: Platform, status: DeliveryStatus) {
        let i = pendingRoutes.firstIndex { $0.platform == platform && $0.app == app } ?? {
            pendingRoutes.append((app, platform, DeliveryTally.Counts()))
            return pendingRoutes.count - 1
        }()
        switch status {
        case .delivered: pendingRoutes[i].counts.delivered += 1
        case .failed: pendingRoutes[i].counts.failed += 1
        case .unregistered: pendingRoutes[i].counts.unregistered += 1
        case .capped: pendingRoutes[i].counts.capped += 1
        }
    }

    private mutating func flushRoutes() {
        for r in pendingRoutes { deliveries.add(r.counts, app: r.app, platform: r.platform) }
        pendingRoutes.removeAll(keepingCapacity: true)
    }

    /// A delivery line laid out exactly as `ResultRecord.Delivery.write` writes it, read at its
    /// places: what is needed is the platform, the app, the status and the time (the code and
    /// reason of a failure). False when it is laid out otherwise or holds an escape in any
    /// string: then it is read member by member.
    private mutating func takeWritten(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = Self.deliveryStart.count
        let n = p.count, quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        func literal(_ bytes: [UInt8]) -> Bool {
            guard n - i >= bytes.count, Self.matches(p, at: i, bytes) else { return false }
            i += bytes.count
            return true
        }
        /// At a value: a string's bytes (nil for `null`); false: neither, or an escape in it.
        func value(_ found: inout Range<Int>?) -> Bool {
            guard i < n else { return false }
            if p[i] == quote {
                let start = i + 1
                i = start
                while i < n, p[i] != quote { if p[i] == backslash { return false }; i += 1 }
                guard i < n else { return false }
                found = start..<i
                i += 1
                return true
            }
            found = nil
            return literal(Self.null)
        }
        var platformBytes: Range<Int>?, appBytes: Range<Int>?, statusBytes: Range<Int>?, code: Range<Int>?, reason: Range<Int>?, at: Range<Int>?
        var key: Range<Int>?, skipped: Range<Int>?
        guard literal(Self.platformKey), value(&platformBytes), literal(Self.providerKey), value(&skipped) else { return false }
        if literal(Self.appKey) { guard value(&appBytes), appBytes != nil else { return false } }
        // The target's key (device, tags, topic, channel or condition) and its value.
        guard literal(Self.comma), value(&key), key != nil, literal(Self.colon), value(&skipped),
              literal(Self.statusKey), value(&statusBytes), literal(Self.attemptsKey) else { return false }
        let digits = i
        while i < n, p[i] &- UInt8(ascii: "0") < 10 { i += 1 }
        guard i > digits, literal(Self.codeKey), value(&code), literal(Self.reasonKey), value(&reason),
              literal(Self.providerIDKey), value(&skipped), literal(Self.atKey), value(&at), i == n - 1, p[i] == UInt8(ascii: "}"),
              let platformBytes, let statusBytes,
              let platform = Self.platforms.first(where: { Self.same(p, platformBytes, $0.bytes) })?.platform,
              let status = Self.statuses.first(where: { Self.same(p, statusBytes, $0.bytes) })?.status else { return false }
        func text(_ r: Range<Int>?) -> String? { r.map { String(decoding: UnsafeBufferPointer(rebasing: p[$0]), as: UTF8.self) } }
        var app: String?
        if let appBytes {
            // Lines of one app follow each other: its name made once.
            if !Self.same(p, appBytes, lastApp.bytes) { lastApp = (Array(p[appBytes]), text(appBytes)!) }
            app = lastApp.name
        }
        count(platform: platform, app: app, status: status, second: at.map { secondOf(p, $0) } ?? 0) { (text(code), text(reason)) }
        return true
    }

    private static let platformKey = Array(#""platform":"#.utf8)
    private static let providerKey = Array(#","provider":"#.utf8)
    private static let appKey = Array(#","app":"#.utf8)
    private static let comma = Array(",".utf8)
    private static let colon = Array(":".utf8)
    private static let statusKey = Array(#","status":"#.utf8)
    private static let attemptsKey = Array(#","attempts":"#.utf8)
    private static let codeKey = Array(#","code":"#.utf8)
    private static let reasonKey = Array(#","reason":"#.utf8)
    private static let providerIDKey = Array(#","provider_id":"#.utf8)
    private static let atKey = Array(#","at":"#.utf8)
    private static let null = Array("null".utf8)

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
        count(platform: platform, app: app, status: status, second: at.map { secondOf(p, $0) } ?? 0) { (code, reason) }
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
