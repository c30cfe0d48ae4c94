import Foundation

/// The registry benches' devices. Device `i` of N is `a<i>` on APNs (its token: `i` as 64 hex
/// digits), `f<i>` on FCM or `w<i>` on WNS, in turn; tagged `username:u<i>` and `interest:<i % 10>`;
/// every `langEvery`-th device has a language (en, fr, de, pt-BR in turn). Written as the import's
/// JSON Lines and as the peers' CSV, bytes appended directly: ten million lines take seconds, not
/// the minute string formatting takes.
struct BenchDevices {
    let count: Int
    let langEvery: Int

    enum Form {
        /// `pushspool import`'s JSON Lines.
        case jsonl
        /// The sqlite3 shell's `devices` rows (rowid, id, platform, handle, updated_at, lang, tags).
        case sqliteDevices
        /// The sqlite3 shell's (tag, rowid) rows.
        case sqliteTags
        /// psql's `\copy` rows (id, platform, handle, updated_at, lang, tags as a text[] literal).
        case postgres
    }

    private static let platforms: [(prefix: UInt8, name: String)] = [(UInt8(ascii: "a"), "apns"), (UInt8(ascii: "f"), "fcm"), (UInt8(ascii: "w"), "wns")]
    private static let langs = ["en", "fr", "de", "pt-BR"]

    func lang(_ i: Int) -> String? { i % langEvery == 0 ? Self.langs[(i / langEvery) % 4] : nil }

    /// Writes every device in `form` to `url` (created or truncated).
    func write(_ form: Form, to url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchError(description: "cannot create \(url.path)")
        }
        let out = try FileHandle(forWritingTo: url)
        defer { try? out.close() }
        var b: [UInt8] = []
        b.reserveCapacity(1 << 21)
        for i in 0..<count {
            line(i, form, into: &b)
            if b.count >= 1 << 20 {
                out.write(Data(b))
                b.removeAll(keepingCapacity: true)
            }
        }
        out.write(Data(b))
    }

    private func line(_ i: Int, _ form: Form, into b: inout [UInt8]) {
        let (prefix, platform) = Self.platforms[i % 3]
        func s(_ text: String) { b.append(contentsOf: text.utf8) }
        func id() { b.append(prefix); decimal(i, into: &b) }
        func handle() {
            switch i % 3 {
            case 0: hex64(i, into: &b)
            case 1: s("fcm-token-"); decimal(i, into: &b)
            default: s("https://db5.notify.windows.com/?token=w"); decimal(i, into: &b)
            }
        }
        let lang = lang(i)
        switch form {
        case .jsonl:
            s(#"{"id":""#); id(); s(#"","platform":""#); s(platform); s(#"","handle":""#); handle()
            s(#"","tags":["username:u"#); decimal(i, into: &b); s(#"","interest:"#); decimal(i % 10, into: &b); s(#""]"#)
            if let lang { s(#","lang":""#); s(lang); s(#"""#) }
            s("}\n")
        case .sqliteDevices:
            // Tags as the registry stores them: sorted, each between spaces.
            decimal(i + 1, into: &b); s(","); id(); s(","); s(platform); s(","); handle(); s(",1700000000.0,"); s(lang ?? "")
            s(", interest:"); decimal(i % 10, into: &b); s(" username:u"); decimal(i, into: &b); s(" \n")
        case .sqliteTags:
            s("username:u"); decimal(i, into: &b); s(","); decimal(i + 1, into: &b)
            s("\ninterest:"); decimal(i % 10, into: &b); s(","); decimal(i + 1, into: &b); s("\n")
        case .postgres:
            id(); s(","); s(platform); s(","); handle(); s(",1700000000,"); s(lang ?? "")
            s(#","{""interest:"#); decimal(i % 10, into: &b); s(#""",""username:u"#); decimal(i, into: &b); s("\"\"}\"\n")
        }
    }

    private func decimal(_ n: Int, into b: inout [UInt8]) {
        if n >= 10 { decimal(n / 10, into: &b) }
        b.append(UInt8(ascii: "0") + UInt8(n % 10))
    }

    private func hex64(_ n: Int, into b: inout [UInt8]) {
        let digits = Array("0123456789abcdef".utf8)
        for shift in stride(from: 252, through: 0, by: -4) {
            b.append(shift >= 64 ? UInt8(ascii: "0") : digits[(n >> shift) & 0xF])
        }
    }
}
