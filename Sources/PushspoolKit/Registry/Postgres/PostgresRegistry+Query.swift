import Foundation
import PushspoolCore

/// Audience queries on PostgreSQL: a tag expression compiled to SQL over the row's tag array
/// (`d.tags @> ARRAY[$n]`, which the GIN index serves), every tag a parameter.
extension PostgresRegistry {
    /// Streams devices in `seq` order, `pageSize` rows per query (keyset pagination: bounded
    /// memory however large the audience). No connection is held while `body` runs; each page
    /// sees the registry as of its own query.
    public func forEach(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?, pageSize: Int,
                        after start: Int64, through: Int64, lastPage: () -> Void, _ body: (Device, Int64) throws -> Bool) throws {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return lastPage() }
        var query = PostgresAudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching)
        query.sparse = try isSparse(matching, limit: max(1, pageSize))
        if through < .max { query.through = through }
        try forEach(query, pageSize: pageSize, after: start, through: through, lastPage: lastPage, body)
    }

    /// One zone's devices (a `local_time` wave reads its zones one by one).
    public func forEach(platforms: Set<Platform>, zone: ZoneKey, tokenKind: APNsTokenKind?, matching: TagExpression?, pageSize: Int, after start: Int64,
                        _ body: (Device, Int64) throws -> Bool) throws {
        guard !platforms.isEmpty else { return }
        var query = PostgresAudienceQuery(platforms: platforms, apps: [zone.app], tokenKind: tokenKind, expression: matching)
        query.sparse = try isSparse(matching, limit: max(1, pageSize))
        query.restrict(toZone: zone.tz)
        try forEach(query, pageSize: pageSize, after: start, through: .max, lastPage: {}, body)
    }

    private func forEach(_ query: PostgresAudienceQuery, pageSize: Int, after start: Int64, through: Int64, lastPage: () -> Void,
                         _ body: (Device, Int64) throws -> Bool) throws {
        let limit = max(1, pageSize)
        var languages: [String: LanguageTag] = [:]
        try KeysetPages.run(after: start, through: through, limit: limit, lastPage: lastPage, key: { $0.1 }, fetch: { after in
            let (devices, seen): ([(Device, Int64)], [String: LanguageTag]) = try run { c in
                let rows = try c.queryOnce(query.pageSQL, query.pageParameters(after: after, limit: limit))
                var known = languages
                var devices: [(Device, Int64)] = []
                devices.reserveCapacity(rows.count)
                for i in 0..<rows.count { devices.append((try Self.device(from: rows, row: i, languages: &known), rows.int64(i, 0))) }
                return (devices, known)
            }
            languages = seen
            return devices
        }) { try body($0.0, $0.1) }
    }

    /// Whether the audience requires a tag that few devices carry (at most 20 pages' worth). Then
    /// each page is found through the tags' GIN index and sorted (a page costs what is left of the
    /// few); otherwise pages are read in `seq` order and filtered (a whole campaign costs one pass
    /// over the table). Left to itself the planner takes the ordered pass for a rare tag too, and
    /// `to_tag username:alice` would read a million rows to find her two devices.
    ///
    /// A tag found common is taken as common for a minute without counting again: every chunk of
    /// a shared job reads its devices with a query of its own, and the count (20 pages' worth of
    /// the tag's index) was a third of the database's time for a queued 300,000-device job. A tag
    /// that became rare meanwhile costs at most the ordered pass; a rare one is always counted.
    func isSparse(_ expression: TagExpression?, limit: Int) throws -> Bool {
        guard let tag = expression.flatMap(AudienceQuery.requiredTag) else { return false }
        let bound = 20 * limit
        let key = "\(tag)\u{1F}\(bound)", now = Uptime.seconds
        if let seen = commonTags.withLock({ $0[key] }), now - seen < 60 { return false }
        let n = try run { c in
            try c.query("SELECT count(*) FROM (SELECT 1 FROM devices WHERE tags @> ARRAY[$1::text] LIMIT $2::bigint) s",
                        [tag, "\(bound + 1)"]).int64(0, 0)
        }
        guard n > bound else { return true }
        commonTags.withLock { tags in
            tags = tags.filter { now - $0.value < 60 }
            tags[key] = now
        }
        return false
    }

    /// Where the next chunk of an audience ends (`PostgresJobQueue`): the `seq` of the
    /// `size`-th matching device after `after`, or of the last one when fewer are left; nil
    /// when none is. One row comes back however large `size` is.
    public func chunkEnd(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?,
                         after: Int64, size: Int) throws(RegistryError) -> Int64? {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return nil }
        let query = PostgresAudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching)
        let page = query.pageSQL(columns: "d.seq")
        return try run { c in
            let r = try c.queryOnce("SELECT max(seq) FROM (\(page)) s", query.pageParameters(after: after, limit: max(1, size)))
            return r.isNull(0, 0) ? nil : r.int64(0, 0)
        }
    }

    public func count(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?) throws(RegistryError) -> Int {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return 0 }
        let query = PostgresAudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching)
        return try run { c in Int(try c.queryOnce(query.countSQL, query.parameters).int64(0, 0)) }
    }

    public func zoneCounts(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?) throws(RegistryError) -> [ZoneCount] {
        guard !platforms.isEmpty, apps?.isEmpty != true else { return [] }
        let query = PostgresAudienceQuery(platforms: platforms, apps: apps, tokenKind: tokenKind, expression: matching)
        let sql = query.countSQL.replacingOccurrences(of: "SELECT count(*)", with: "SELECT d.app, d.tz, count(*)")
            + " GROUP BY d.app, d.tz ORDER BY d.app, d.tz"
        return try run { c in
            let rows = try c.queryOnce(sql, query.parameters)
            return (0..<rows.count).map { ZoneCount(app: rows.text($0, 0) ?? "", tz: rows.text($0, 1), devices: Int(rows.int64($0, 2))) }
        }
    }
}

/// The SQL of one audience on PostgreSQL: `$1`… numbered in text order.
struct PostgresAudienceQuery {
    private(set) var parameters: [String?] = []
    private var conditions: [String] = []
    /// Few devices match: pages ordered by `seq + 0`, which keeps the planner off the ordered
    /// primary-key scan and on the tags' index (see `PostgresRegistry.isSparse`).
    var sparse = false
    /// Pages end at this key (a chunk's last device): no page reads past it.
    var through: Int64?

    init(platforms: Set<Platform>, apps: Set<String>? = nil, tokenKind: APNsTokenKind? = nil, expression: TagExpression?) {
        if platforms.count < Platform.allCases.count {
            parameters.append(PostgresRegistry.arrayLiteral(platforms.map(\.rawValue).sorted()))
            conditions.append("d.platform = ANY($\(parameters.count)::text[])")
        }
        if let apps {
            parameters.append(PostgresRegistry.arrayLiteral(apps.sorted()))
            conditions.append("d.app = ANY($\(parameters.count)::text[])")
        }
        if let tokenKind, platforms.contains(.apns) {
            // Only the APNs tokens that serve the job's push type; other platforms' rows pass.
            parameters.append(tokenKind.rawValue)
            let test = "d.token_kind = $\(parameters.count)"
            conditions.append(platforms == [.apns] ? test : "(d.platform <> 'apns' OR \(test))")
        }
        if let expression { conditions.append(sql(for: expression)) }
    }

    private mutating func parameter(_ value: String) -> String {
        parameters.append(value)
        return "$\(parameters.count)"
    }

    /// Runs of one operator are flattened and joined as a balanced tree, so a thousand-tag OR
    /// stays shallow for the parser.
    private mutating func sql(for e: TagExpression) -> String {
        switch e {
        case .tag(let t):
            return "d.tags @> ARRAY[\(parameter(t))::text]"
        case .not(let inner):
            return "NOT " + sql(for: inner)
        case .and:
            var parts: [String] = []
            for operand in e.operands(and: true) { parts.append(sql(for: operand)) }
            return Self.balanced(parts[...], "AND")
        case .or:
            var parts: [String] = []
            for operand in e.operands(and: false) { parts.append(sql(for: operand)) }
            return Self.balanced(parts[...], "OR")
        }
    }

    private static func balanced(_ parts: ArraySlice<String>, _ op: String) -> String {
        if parts.count == 1, let only = parts.first { return "(" + only + ")" }
        let mid = parts.startIndex + parts.count / 2
        return "(" + balanced(parts[..<mid], op) + " \(op) " + balanced(parts[mid...], op) + ")"
    }


    /// Only devices with this registered zone (nil: with none).
    mutating func restrict(toZone tz: String?) {
        if let tz {
            parameters.append(tz)
            conditions.append("d.tz = $\(parameters.count)")
        } else {
            conditions.append("d.tz IS NULL")
        }
    }

    var countSQL: String {
        "SELECT count(*) FROM devices d" + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
    }

    /// The cursor and limit come after the audience's own parameters.
    var pageSQL: String { pageSQL(columns: PostgresRegistry.deviceColumns) }

    func pageSQL(columns: String) -> String {
        let n = parameters.count
        return "SELECT \(columns) FROM devices d WHERE "
            + (conditions + ["d.seq > $\(n + 1)::bigint"] + (through == nil ? [] : ["d.seq <= $\(n + 3)::bigint"])).joined(separator: " AND ")
            + (sparse ? " ORDER BY d.seq + 0" : " ORDER BY d.seq") + " LIMIT $\(n + 2)::bigint"
    }

    func pageParameters(after: Int64, limit: Int) -> [String?] {
        parameters + ["\(after)", "\(limit)"] + (through.map { ["\($0)"] } ?? [])
    }
}
