import PushspoolCore

/// The targets a result log records as final, in 16 bytes each: two independent 64-bit hashes of
/// (platform, device id or hub tags), kept sorted. A resumed 1M-device job holds 16 MB here where
/// a set of `platform|device` strings held about 70 MB. Two seeded 64-bit hashes make a false
/// match (a target skipped that was never sent) about 1 in 10^25 for a million targets; the seeds
/// are the process's own, so nothing about them is ever stored.
public struct FinishedTargets: Sendable {
    private struct Print: Comparable, Hashable {
        var a: UInt64, b: UInt64
        static func < (l: Print, r: Print) -> Bool { (l.a, l.b) < (r.a, r.b) }
    }
    private var prints: [Print] = []
    private var sealed = true

    public init() {}

    /// Distinct targets (once sealed).
    public var count: Int { prints.count }

    mutating func insert(platform: String, device: String) { add(Self.print(platform, 0, device)) }
    /// A hub or service send is one per app (two apps may route one platform to two hubs). `app`:
    /// the line's; nil in a log written before apps, which a resumed job then matches by
    /// platform and audience alone (such a job had one app).
    mutating func insert(platform: String, hubTags: String, app: String?) { add(Self.print(platform, 1, Self.scoped(app, hubTags))) }
    mutating func insert(platform: String, service field: String, _ value: String, app: String?) {
        add(Self.print(platform, 2, Self.scoped(app, field + ":" + value)))
    }

    private static func scoped(_ app: String?, _ who: String) -> String { app.map { $0 + "\u{1F}" + who } ?? who }

    /// Sorts and drops repeats; `contains` needs it (reading a log ends with it).
    mutating func seal() {
        guard !sealed else { return }
        prints.sort()
        var out = 0
        for i in prints.indices where i == 0 || prints[i] != prints[out - 1] {
            prints[out] = prints[i]
            out += 1
        }
        prints.removeLast(prints.count - out)
        prints.shrinkToFit()
        sealed = true
    }

    /// `app`: the hub send's app (a device's line is found by its id alone).
    public func contains(platform: Platform, recipient: Recipient, app: String? = nil) -> Bool {
        precondition(sealed, "FinishedTargets read before seal()")
        if prints.isEmpty { return false }          // a job's first run: no hashing per target
        switch recipient {
        case .device(let d): return contains(Self.print(platform.rawValue, 0, d.id))
        case .hub(let audience):
            let (kind, who): (UInt8, String) = if let (field, value) = audience.serviceTarget { (2, field + ":" + value) }
                else { (1, audience.hubTags ?? "") }
            return contains(Self.print(platform.rawValue, kind, Self.scoped(app, who)))
                || (app != nil && contains(Self.print(platform.rawValue, kind, who)))
        }
    }

    /// Whether every target of `other` (sealed, not empty) is here.
    func contains(all other: FinishedTargets) -> Bool {
        !other.prints.isEmpty && other.prints.allSatisfy { contains($0) }
    }

    private func contains(_ p: Print) -> Bool {
        var lo = 0, hi = prints.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if prints[mid] < p { lo = mid + 1 } else { hi = mid }
        }
        return lo < prints.count && prints[lo] == p
    }

    private mutating func add(_ p: Print) {
        prints.append(p)
        sealed = false
    }

    private static func print(_ platform: String, _ kind: UInt8, _ who: String) -> Print {
        func hash(_ seed: UInt64) -> UInt64 {
            var h = Hasher()
            h.combine(seed)
            h.combine(platform)
            h.combine(kind)
            h.combine(who)
            return UInt64(bitPattern: Int64(h.finalize()))
        }
        return Print(a: hash(0x7075_7368), b: hash(0x7370_6F6F))
    }
}

extension Array {
    fileprivate mutating func shrinkToFit() {
        guard capacity > count + count / 8 else { return }
        self = Array(self[...])
    }
}
