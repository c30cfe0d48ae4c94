import PushspoolCore

/// A delivery line's status and attempts, read fast: the origin of a queued job reads every line
/// every host recorded, and a whole JSON tree per line was a fifth of its CPU. A line laid out as
/// `ResultRecord.Delivery` writes it is read from its bytes (its first `,"status":"` is that key:
/// a quote inside a JSON string is escaped); any other line is parsed.
enum DeliveryLine {
    private static let start = Array(#"{"type":"delivery","#.utf8)
    private static let statusKey = Array(#","status":""#.utf8)
    private static let attemptsKey = Array(#"","attempts":"#.utf8)

    /// nil: not a delivery line.
    static func statusAndAttempts(_ line: [UInt8]) -> (DeliveryStatus, Int)? {
        if line.starts(with: start), var i = end(of: statusKey, in: line) {
            let first = i
            while i < line.count, line[i] != UInt8(ascii: "\"") { i += 1 }
            if let status = DeliveryStatus(rawValue: String(decoding: line[first..<i], as: UTF8.self)),
               line[i...].starts(with: attemptsKey) {
                i += attemptsKey.count
                var attempts = 0, digits = 0
                while i < line.count, digits < 9, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[i]) {
                    attempts = attempts * 10 + Int(line[i] - UInt8(ascii: "0"))
                    i += 1
                    digits += 1
                }
                if digits > 0 { return (status, attempts) }
            }
        }
        guard case .delivery(let d)? = ResultRecord(line: line) else { return nil }
        return (d.status, d.attempts)
    }

    /// Where `key` first ends in `line` (a plain loop: the generic `firstRange(of:)` cost as much
    /// as the parse).
    private static func end(of key: [UInt8], in line: [UInt8]) -> Int? {
        guard !key.isEmpty, key.count <= line.count else { return nil }
        var i = 0
        search: while i <= line.count - key.count {
            for j in 0..<key.count where line[i + j] != key[j] {
                i += 1
                continue search
            }
            return i + key.count
        }
        return nil
    }
}
