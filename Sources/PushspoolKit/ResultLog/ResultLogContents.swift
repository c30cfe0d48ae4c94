import Foundation
import PushspoolCore

/// What an existing result log already records (for resuming after a crash and for duplicates).
public struct ResultLogContents: Sendable {
    public var hasJobLine = false
    /// From the job line: the job file's name and the targets planned.
    public var file: String?
    public var targets: Int?
    /// The summary line, once the job has ended.
    public var summary: ResultRecord.Summary?
    public var summaryStatus: SummaryStatus? { summary?.status }
    /// Every target already final (a resume skips them).
    public var finished = FinishedTargets()
    public var delivered = 0, failed = 0, unregistered = 0, retries = 0, capped = 0
    /// A `local_time` job: when its waves were planned (RFC 3339), and the instants of the waves
    /// that ended (sent or skipped), which a restart neither sends again nor skips.
    public var wavesPlannedAt: String?
    public var wavesEnded: Set<String> = []
    /// The counts per app and platform (a whole log read only: a resume point keeps totals).
    public var byRoute = DeliveryTally()

    public init() {}

    /// The point this was read from (nil: the whole log was read).
    public var resumedFrom: ResumePoint?

    /// Reads a log line by line (bounded memory per line); torn or foreign lines are skipped.
    /// With a resume point that fits the file, only the job line, the point's tails (for their
    /// targets) and what follows the point's offset are read; the counts before it are the
    /// point's. Otherwise the whole log.
    public static func read(_ url: URL, from point: ResumePoint? = nil) -> ResultLogContents? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() }
        var c = ResultLogContents()
        if let point, fits(point, handle) {
            c.resumedFrom = point
            // The job line is the log's first.
            c.scan(handle, from: 0, to: nil, firstLineOnly: true, count: false)
            for tail in point.tails { c.scan(handle, from: tail.lowerBound, to: tail.upperBound, count: false) }
            c.delivered = point.log.delivered
            c.failed = point.log.failed
            c.unregistered = point.log.unregistered
            c.retries = point.log.retries
            c.capped = point.log.capped
            c.scan(handle, from: point.log.offset, to: nil, count: true)
        } else {
            c.scan(handle, from: 0, to: nil, count: true)
        }
        c.finished.seal()
        return c
    }

    /// Every offset the point names is inside the file and at a line's start.
    private static func fits(_ point: ResumePoint, _ handle: FileHandle) -> Bool {
        guard let size = try? handle.seekToEnd() else { return false }
        func lineStart(_ offset: Int64) -> Bool {
            guard offset > 0 else { return offset == 0 }
            guard offset <= Int64(size), (try? handle.seek(toOffset: UInt64(offset - 1))) != nil,
                  let byte = try? handle.read(upToCount: 1) else { return false }
            return byte.first == 0x0A
        }
        return point.after >= 0 && lineStart(point.log.offset) && point.tails.allSatisfy { lineStart($0.lowerBound) && lineStart($0.upperBound) }
    }

    /// Absorbs the whole lines between two offsets (`to` nil: the end); `count`: add their
    /// deliveries to the counts (a tail's are in the point's counts already).
    private mutating func scan(_ handle: FileHandle, from: Int64, to: Int64?, firstLineOnly: Bool = false, count: Bool) {
        guard (try? handle.seek(toOffset: UInt64(from))) != nil else { return }
        var left = to.map { $0 - from } ?? Int64.max
        var pending: [UInt8] = []
        while left > 0, let chunk = try? handle.read(upToCount: Int(min(left, 1 << 20))), !chunk.isEmpty {
            left -= Int64(chunk.count)
            pending.append(contentsOf: chunk)
            var start = 0
            while let nl = pending[start...].firstIndex(of: 0x0A) {
                absorb(Array(pending[start..<nl]), count: count)
                start = nl + 1
                if firstLineOnly { return }
            }
            pending.removeFirst(start)
        }
    }

    /// Whether `line` is a delivery line for a target this (read, so sealed) log has final already.
    func alreadyHas(_ line: [UInt8]) -> Bool {
        guard finished.count > 0 else { return false }
        var one = ResultLogContents()
        one.absorb(line, count: false)
        one.finished.seal()
        return finished.contains(all: one.finished)
    }

    mutating func absorb(_ line: [UInt8], count: Bool = true) {
        switch ResultRecord(line: line) {
        case .job(let j)?:
            hasJobLine = true
            file = j.file
            targets = j.targets
        case .summary(let s)?:
            summary = s
        case .delivery(let d)?:
            switch d.target {
            case .device(let id): finished.insert(platform: d.platform.rawValue, device: id)
            case .tags(let tags): finished.insert(platform: d.platform.rawValue, hubTags: tags ?? "", app: d.app)
            case .service(let field, let value): finished.insert(platform: d.platform.rawValue, service: field, value, app: d.app)
            }
            guard count else { return }
            switch d.status {
            case .delivered: delivered += 1
            case .unregistered: unregistered += 1
            case .failed: failed += 1
            case .capped: capped += 1
            }
            byRoute.count(d)
            retries += max(0, d.attempts - 1)
        case .wave(let w)?:
            if w.status == "planned" { wavesPlannedAt = wavesPlannedAt ?? w.at } else { wavesEnded.insert(w.at) }
        case .registration?, .hub?, nil:
            return
        }
    }
}
