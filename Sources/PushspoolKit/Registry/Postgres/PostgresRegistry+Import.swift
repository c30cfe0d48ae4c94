import Foundation
import PushspoolCore

/// Bulk import into PostgreSQL, in one transaction. Into an empty registry: a bulk load, every
/// valid line streamed through `COPY … FROM STDIN` straight into `devices` with its indexes
/// dropped, then each index built once from a sort (other hosts' reads wait for it: the table is
/// locked exclusively for the load's length). Otherwise: COPY into a temporary table, merged into
/// `devices` by a few set-based statements; other hosts keep reading (and sending) the registry
/// as it was until the commit, and their registrations wait for it.
extension PostgresRegistry {
    public func importJSONL(contentsOf url: URL, now: Date = Date(),
                            progress: (@Sendable (Int) -> Void)? = nil) throws(RegistryError) -> RegistryImportReport {
        let stamp = "\(now.timeIntervalSince1970)", defaults = defaults
        return try transaction { c in
            // Memory for the sorts of this transaction only (index builds, duplicate checks).
            try c.execute("SET LOCAL work_mem = '64MB'; SET LOCAL maintenance_work_mem = '256MB'")
            if try Self.isEmpty(c) {
                try c.execute("LOCK TABLE devices IN ACCESS EXCLUSIVE MODE")
                if try Self.isEmpty(c) {
                    try c.execute("SAVEPOINT bulk")
                    do {
                        let report = try Self.bulkLoad(url, stamp: stamp, defaults: defaults, into: c, progress: progress)
                        try c.execute("RELEASE bulk")
                        return report
                    } catch let e as PostgresError where e.isUniqueViolation {
                        // The file names an id or a handle twice: merged instead, below.
                        try c.execute("ROLLBACK TO bulk; RELEASE bulk")
                    }
                }
            }
            return try Self.merge(url, stamp: stamp, defaults: defaults, into: c, progress: progress)
        }
    }

    private static func isEmpty(_ c: PostgresConnection) throws -> Bool {
        try c.query("SELECT NOT EXISTS(SELECT 1 FROM devices)").text(0, 0) == "t"
    }

    private static func bulkLoad(_ url: URL, stamp: String, defaults: RegistryDefaults, into c: PostgresConnection,
                                 progress: (@Sendable (Int) -> Void)?) throws -> RegistryImportReport {
        try c.execute(PostgresSchema.dropDeviceIndexes)
        let report = try copy(url, "COPY devices(id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz) FROM STDIN",
                              into: c, stamp: stamp, defaults: defaults, progress: progress)
        try c.execute(PostgresSchema.deviceIndexes + "ANALYZE devices;")
        return report
    }

    private static func merge(_ url: URL, stamp: String, defaults: RegistryDefaults, into c: PostgresConnection,
                              progress: (@Sendable (Int) -> Void)?) throws -> RegistryImportReport {
        try c.execute("""
            LOCK TABLE devices IN SHARE ROW EXCLUSIVE MODE;
            CREATE TEMP TABLE import_devices(line bigint NOT NULL, id text, platform text NOT NULL,
                handle text NOT NULL, lang text, tags text[] NOT NULL, app text NOT NULL, environment text,
                token_kind text NOT NULL, tz text) ON COMMIT DROP;
            """)
        var report = try copy(url, "COPY import_devices(line, id, platform, handle, lang, tags, app, environment, token_kind, tz) FROM STDIN",
                              into: c, stamp: nil, defaults: defaults, progress: progress)
        let duplicated = try c.query("""
            SELECT EXISTS(SELECT 1 FROM import_devices WHERE id IS NOT NULL GROUP BY id HAVING count(*) > 1)
                OR EXISTS(SELECT 1 FROM import_devices GROUP BY handle, app, platform HAVING count(*) > 1)
            """)
        if duplicated.text(0, 0) == "t" {
            // The file names an id or a handle twice: line by line, in file order, with the
            // upsert's handle-move rules (as the SQLite registry does).
            try c.execute("DROP TABLE import_devices")
            return try upsertLineByLine(url, stamp: stamp, defaults: defaults, into: c, progress: progress)
        }
        try c.execute("""
            ANALYZE import_devices;
            UPDATE import_devices i SET id = d.id FROM devices d
                WHERE i.id IS NULL AND d.handle = i.handle AND d.app = i.app AND d.platform = i.platform;
            UPDATE import_devices SET id = gen_random_uuid()::text WHERE id IS NULL;
            """)
        // Handles moving to another id: counted, the first few named, before their rows go.
        let same = "d.handle = i.handle AND d.app = i.app AND d.platform = i.platform"
        let moves = "FROM devices d JOIN import_devices i ON \(same) AND d.id <> i.id"
        report.moved = Int(try c.query("SELECT count(*) \(moves)").text(0, 0) ?? "0") ?? 0
        let first = try c.query("SELECT d.id, i.id \(moves) ORDER BY i.line LIMIT \(RegistryImportReport.keptMoves)")
        report.firstMoves = (0..<first.count).map { "\(first.text($0, 0) ?? "") → \(first.text($0, 1) ?? "")" }
        try c.execute("DELETE FROM devices d USING import_devices i WHERE \(same) AND d.id <> i.id")
        try c.query("""
            INSERT INTO devices(id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz)
                SELECT id, platform, handle, $1::float8, lang, tags, app, environment, token_kind, tz FROM import_devices ORDER BY line
            ON CONFLICT (id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                updated_at = excluded.updated_at, lang = excluded.lang, tags = excluded.tags,
                app = excluded.app, environment = excluded.environment, token_kind = excluded.token_kind, tz = excluded.tz
            """, [stamp])
        return report
    }

    /// COPY of every valid line (text format, 256 KiB per message). `stamp` nil: into
    /// `import_devices` (line number, id or NULL, platform, handle, lang, tags); else into
    /// `devices` (id, a new UUID when the line has none, platform, handle, `stamp`, lang, tags).
    private static func copy(_ url: URL, _ sql: String, into c: PostgresConnection, stamp: String?, defaults: RegistryDefaults,
                             progress: (@Sendable (Int) -> Void)?) throws -> RegistryImportReport {
        var report = RegistryImportReport()
        try c.copyIn(sql) { send in
            var buffer: [UInt8] = []
            buffer.reserveCapacity(300_000)
            var line = 0
            report = try RegistrationFile(url, defaults: defaults).forEachRegistration(progress: progress) { r in
                line += 1
                if stamp == nil {
                    Self.appendDecimal(line, to: &buffer)
                    buffer.append(0x09)
                }
                if let id = r.id {
                    Self.appendEscaped(id, to: &buffer)
                } else if stamp != nil {
                    buffer += UUID().uuidString.lowercased().utf8
                } else {
                    buffer += [0x5C, 0x4E]   // \N
                }
                buffer.append(0x09)
                buffer += r.platform.rawValue.utf8
                buffer.append(0x09)
                Self.appendEscaped(r.handle, to: &buffer)
                buffer.append(0x09)
                if let stamp {
                    buffer += stamp.utf8
                    buffer.append(0x09)
                }
                if let lang = r.lang { buffer += lang.value.utf8 } else { buffer += [0x5C, 0x4E] }
                buffer.append(0x09)
                // `{"a","b"}`: tags hold no quote, backslash, comma, tab or newline.
                buffer.append(0x7B)
                var first = true
                for tag in r.tags.count < 2 ? r.tags : Array(Set(r.tags)).sorted() {
                    if !first { buffer.append(0x2C) }
                    first = false
                    buffer.append(0x22)
                    buffer += tag.utf8
                    buffer.append(0x22)
                }
                buffer += [0x7D, 0x09]
                Self.appendEscaped(defaults.app(of: r), to: &buffer)
                buffer.append(0x09)
                if let env = defaults.environment(of: r) { buffer += env.rawValue.utf8 } else { buffer += [0x5C, 0x4E] }
                buffer.append(0x09)
                buffer += (r.tokenKind ?? .device).rawValue.utf8
                buffer.append(0x09)
                if let tz = r.tz { buffer += tz.utf8 } else { buffer += [0x5C, 0x4E] }   // zone names need no escape
                buffer.append(0x0A)
                if buffer.count >= 256 * 1024 {
                    try buffer.withUnsafeBytes { try send($0) }
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try buffer.withUnsafeBytes { try send($0) }
        }
        return report
    }

    private static func upsertLineByLine(_ url: URL, stamp: String, defaults: RegistryDefaults, into c: PostgresConnection,
                                         progress: (@Sendable (Int) -> Void)?) throws -> RegistryImportReport {
        var moves = RegistryImportReport()
        var report = try RegistrationFile(url, defaults: defaults).forEachRegistration(progress: progress) { r in
            let tags = Array(Set(r.tags)).sorted()
            let app = defaults.app(of: r), env = defaults.environment(of: r)?.rawValue
            let holder = try c.query("SELECT id FROM devices WHERE handle = $1 AND app = $2 AND platform = $3", [r.handle, app, r.platform.rawValue])
            let previous = holder.count > 0 ? holder.text(0, 0) : nil
            let id = r.id ?? previous ?? UUID().uuidString.lowercased()
            if let previous, previous != id {
                try c.query("DELETE FROM devices WHERE handle = $1 AND app = $2 AND platform = $3", [r.handle, app, r.platform.rawValue])
                moves.noteMove(from: previous, to: id)
            }
            try c.query("""
                INSERT INTO devices(id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz)
                    VALUES($1, $2, $3, $4::float8, $5, $6::text[], $7, $8, $9, $10)
                ON CONFLICT (id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                    updated_at = excluded.updated_at, lang = excluded.lang, tags = excluded.tags,
                    app = excluded.app, environment = excluded.environment, token_kind = excluded.token_kind, tz = excluded.tz
                """, [id, r.platform.rawValue, r.handle, stamp, r.lang?.value, arrayLiteral(tags), app, env,
                      (r.tokenKind ?? .device).rawValue, r.tz])
        }
        (report.moved, report.firstMoves) = (moves.moved, moves.firstMoves)
        return report
    }

    /// COPY text format: a backslash, tab, newline or carriage return in a value is escaped.
    private static func appendEscaped(_ s: String, to buffer: inout [UInt8]) {
        for b in s.utf8 {
            switch b {
            case 0x5C: buffer += [0x5C, 0x5C]
            case 0x09: buffer += [0x5C, 0x74]
            case 0x0A: buffer += [0x5C, 0x6E]
            case 0x0D: buffer += [0x5C, 0x72]
            default: buffer.append(b)
            }
        }
    }

    private static func appendDecimal(_ n: Int, to buffer: inout [UInt8]) {
        var digits: [UInt8] = []
        var v = n
        repeat {
            digits.append(UInt8(0x30 + v % 10))
            v /= 10
        } while v > 0
        buffer += digits.reversed()
    }
}
