import PushspoolCore

/// Audience queries: a tag expression compiled to SQL over `devices d` with bound parameters
/// (tags are never interpolated into SQL text).
extension SQLiteRegistry {
    /// Streams devices of `platforms` matching `matching` (nil = all) in rowid order, `pageSize`
    /// rows per query (keyset pagination: memory stays bounded for a million devices). The
    /// connection lock is NOT held while `body` runs, so other threads may upsert or removeGone
    /// during a stream; each page sees the registry as of its own query. `body` returns false to
    /// stop early.
    public func forEach(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?, pageSize: Int,
                        after start: Int64, through: Int64, lastPage: () -> Void, _ body: (Device, Int64) throws -> Bool) throws {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return lastPage() }
        try forEach(AudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching), pageSize: pageSize,
                    after: start, through: through, lastPage: lastPage, body)
    }

    /// One zone's devices, through `devices_by_tz` (`prepareZoneReads`).
    public func forEach(platforms: Set<Platform>, zone: ZoneKey, tokenKind: APNsTokenKind?, matching: TagExpression?, pageSize: Int, after start: Int64,
                        _ body: (Device, Int64) throws -> Bool) throws {
        guard !platforms.isEmpty else { return }
        try prepareZoneReads()
        // A platform at a time: each is one range of the index, already in key order.
        var stopped = false
        for platform in platforms.sorted() where !stopped {
            var query = AudienceQuery(platforms: [platform], apps: nil, tokenKind: tokenKind, expression: matching)
            query.restrict(to: zone)
            try forEach(query, pageSize: pageSize, after: start, through: .max, lastPage: {}) { device, key in
                let more = try body(device, key)
                stopped = !more
                return more
            }
        }
    }

    private func forEach(_ query: AudienceQuery, pageSize: Int, after start: Int64, through: Int64, lastPage: () -> Void,
                         _ body: (Device, Int64) throws -> Bool) throws {
        let limit = max(1, pageSize)
        let sql = query.pageSQL
        var reader = SQLiteDeviceReader()   // what repeats across pages: a campaign's few languages, apps
        try KeysetPages.run(after: start, through: through, limit: limit, lastPage: lastPage, key: { $0.rowid }, fetch: { after in
            let (page, seen): ([Row], SQLiteDeviceReader) = try locked { db in
                let stmt = try db.statement(sql, fixed: false)
                try stmt.bind(query.pageParameters(after: after, limit: limit))
                defer { stmt.reset() }
                var rows: [Row] = []
                rows.reserveCapacity(min(limit, 4096))
                var known = reader
                while try stmt.step() { rows.append(Row(rowid: stmt.int64(0), device: try known.device(from: stmt))) }
                return (rows, known)
            }
            reader = seen
            return page
        }) { try body($0.device, $0.rowid) }
    }

    /// How many devices of `platforms` match `matching` (nil = all).
    public func count(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?) throws(RegistryError) -> Int {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return 0 }
        let query = AudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching)
        return try locked { db in
            let stmt = try db.statement(query.countSQL, fixed: false)
            try stmt.bind(query.countParameters)
            defer { stmt.reset() }
            return try stmt.step() ? Int(stmt.int64(0)) : 0
        }
    }

    public func zoneCounts(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?) throws(RegistryError) -> [ZoneCount] {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return [] }
        try prepareZoneReads()
        let query = AudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching)
        return try locked { db in
            let stmt = try db.statement(query.countSQL.replacingOccurrences(of: "SELECT count(*)", with: "SELECT d.app, d.tz, count(*)")
                                        + " GROUP BY d.app, d.tz ORDER BY d.app, d.tz", fixed: false)
            try stmt.bind(query.countParameters)
            defer { stmt.reset() }
            var counts: [ZoneCount] = []
            while try stmt.step() {
                counts.append(ZoneCount(app: stmt.text(0), tz: stmt.isNull(1) ? nil : stmt.text(1), devices: Int(stmt.int64(2))))
            }
            return counts
        }
    }

    /// Builds `devices_by_tz` on `(app, tz, platform)` the first time a process reads by zone (once per
    /// registry: one that never sees a `local_time` job, and its imports, never pay for it). It
    /// finds a wave's zones in key order, and counts the devices per zone from the index alone.
    /// A wave reads its zones' rows all over the table (a zone is a few percent of every page):
    /// the connection then maps the file (`mmap_size`), so those reads cost no system call each.
    func prepareZoneReads() throws(RegistryError) {
        guard !zoneIndexReady.withLock({ $0 }) else { return }
        try locked { db in
            try db.execute("CREATE INDEX IF NOT EXISTS devices_by_tz ON devices(app, tz, platform); PRAGMA mmap_size = \(Self.zoneReadMap)")
        }
        zoneIndexReady.withLock { $0 = true }
    }

    /// 1 GiB of address space (a million devices is about 300 MB of file).
    static let zoneReadMap = 1 << 30

    struct Row: Sendable {
        var rowid: Int64
        var device: Device
    }
}

/// The SQL for one audience. When the expression requires some tag (`a`, `a && !b`,
/// `(a || b) && c`), the scan is driven by that tag's slice of the `(tag, device_rowid)` primary
/// key, already in rowid order, instead of testing every device: `to_tag username:alice` over a
/// million devices touches alice's rows only. Otherwise every device row of the platforms is read
/// once, in rowid order, and the expression tested on its tag list. A send's push type keeps the
/// APNs rows whose token kind serves it (`d.token_kind`), in the same query.
struct AudienceQuery {
    private var from: String
    private var conditions: [String]
    private var parameters: [SQLiteValue]
    private var drivingTag: String?

    init(platforms: Set<Platform>, apps: Set<String>? = nil, tokenKind: APNsTokenKind? = nil, expression: TagExpression?) {
        var conditions: [String] = []
        var parameters: [SQLiteValue] = []
        if platforms.count < Platform.allCases.count {
            let sorted = platforms.sorted()
            conditions.append("d.platform IN (\(sorted.map { _ in "?" }.joined(separator: ", ")))")
            parameters += sorted.map { .text($0.rawValue) }
        }
        if let apps {
            let sorted = apps.sorted()
            conditions.append("d.app IN (\(sorted.map { _ in "?" }.joined(separator: ", ")))")
            parameters += sorted.map { .text($0) }
        }
        if let tokenKind, platforms.contains(.apns) {
            // The job's push type is served by one kind of APNs token; other platforms' rows pass.
            // The kind first: on a registry of `device` tokens (the common case) one test passes each row.
            conditions.append(platforms == [.apns] ? "d.token_kind = ?" : "(d.token_kind = ? OR d.platform <> 'apns')")
            parameters.append(.text(tokenKind.rawValue))
        }
        drivingTag = expression.flatMap(Self.requiredTag)
        if let expression {
            if case .tag = expression, drivingTag != nil {
                // The driving join already is the whole test.
            } else {
                conditions.append(Self.sql(for: expression, parameters: &parameters))
            }
        }
        // CROSS JOIN fixes the loop order in SQLite: tag slice outside, device lookup inside.
        from = drivingTag == nil ? "devices d" : "device_tags r CROSS JOIN devices d"
        self.conditions = conditions
        self.parameters = parameters
    }

    /// Only one app's devices with one registered zone (with one platform, the index
    /// `devices_by_tz` finds them in key order).
    mutating func restrict(to zone: ZoneKey) {
        conditions.append("d.app = ?")
        parameters.append(.text(zone.app))
        if let tz = zone.tz {
            conditions.append("d.tz = ?")
            parameters.append(.text(tz))
        } else {
            conditions.append("d.tz IS NULL")
        }
    }

    private var cursor: String { drivingTag == nil ? "d.rowid" : "r.device_rowid" }

    private var driving: [String] {
        drivingTag == nil ? [] : ["r.tag = ?", "d.rowid = r.device_rowid"]
    }

    private var drivingParameters: [SQLiteValue] { drivingTag.map { [.text($0)] } ?? [] }

    var pageSQL: String {
        let all = driving + ["\(cursor) > ?"] + conditions
        return "SELECT \(SQLiteRegistry.deviceColumns) FROM \(from) WHERE \(all.joined(separator: " AND ")) ORDER BY \(cursor) LIMIT ?"
    }

    func pageParameters(after: Int64, limit: Int) -> [SQLiteValue] {
        drivingParameters + [.integer(after)] + parameters + [.integer(Int64(limit))]
    }

    var countSQL: String {
        let all = driving + conditions
        return "SELECT count(*) FROM \(from)" + (all.isEmpty ? "" : " WHERE " + all.joined(separator: " AND "))
    }

    var countParameters: [SQLiteValue] { drivingParameters + parameters }

    /// A tag every matching device must carry, if the expression implies one.
    static func requiredTag(_ e: TagExpression) -> String? {
        switch e {
        case .tag(let t): return t
        case .not: return nil
        case .and(let a, let b): return requiredTag(a) ?? requiredTag(b)
        case .or(let a, let b):
            guard let ta = requiredTag(a), ta == requiredTag(b) else { return nil }
            return ta
        }
    }

    /// Compiles `e` to a boolean SQL expression over the row's tag list (`d.tags`, ` a b c `),
    /// appending its parameters in text order: a tag test is a substring search on the row being
    /// read, no index probe per device, so a full scan tests a million devices in well under a
    /// second. SQLite refuses expression trees deeper than 1000 and parses `a OR b OR c` one
    /// level per operand, so runs of the same operator are flattened and re-joined as a balanced
    /// tree (depth log2 n).
    static func sql(for e: TagExpression, parameters: inout [SQLiteValue]) -> String {
        switch e {
        case .tag(let t):
            parameters.append(.text(" \(t) "))
            return "instr(d.tags, ?) > 0"
        case .not(let inner):
            return "NOT " + sql(for: inner, parameters: &parameters)
        case .and:
            let parts = e.operands(and: true).map { sql(for: $0, parameters: &parameters) }
            return balanced(parts[...], "AND")
        case .or:
            let parts = e.operands(and: false).map { sql(for: $0, parameters: &parameters) }
            return balanced(parts[...], "OR")
        }
    }

    /// `parts` joined by `op` with parentheses splitting each run in half; text order is kept,
    /// so the parameters appended while compiling the parts stay in step.
    private static func balanced(_ parts: ArraySlice<String>, _ op: String) -> String {
        if parts.count == 1, let only = parts.first { return only }
        let mid = parts.startIndex + parts.count / 2
        return "(" + balanced(parts[..<mid], op) + " \(op) " + balanced(parts[mid...], op) + ")"
    }
}
