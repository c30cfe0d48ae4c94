import Foundation

/// RFC 3339 date-times (`2026-11-22T09:30:00Z`, `2026-11-22T10:30:00.250+01:00`), parsed by hand:
/// the offset is mandatory (a local time would mean something different on every dispatcher), and
/// ISO8601DateFormatter accepts and rejects different things across Foundation versions.
public enum RFC3339 {
    public static func date(from text: String) -> Date? {
        var s = Scanner(bytes: Array(text.utf8))
        guard let year = s.digits(4), s.take("-"), let month = s.digits(2), s.take("-"), let day = s.digits(2),
              s.take("T") || s.take("t"),
              let hour = s.digits(2), s.take(":"), let minute = s.digits(2), s.take(":"), let second = s.digits(2)
        else { return nil }
        var fraction = 0.0
        if s.take(".") {
            var scale = 0.1
            var count = 0
            while let d = s.digit() {
                fraction += Double(d) * scale
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offset = 0
        if s.take("Z") || s.take("z") {
            offset = 0
        } else {
            let sign: Int
            if s.take("+") { sign = 1 } else if s.take("-") { sign = -1 } else { return nil }
            guard let oh = s.digits(2), s.take(":"), let om = s.digits(2), oh <= 23, om <= 59 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        }
        guard s.atEnd, (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour <= 23, minute <= 59, second <= 60  // 60: a leap second, counted as the next second
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private struct Scanner {
        let bytes: [UInt8]
        var i = 0

        var atEnd: Bool { i == bytes.count }

        mutating func take(_ c: Character) -> Bool {
            guard i < bytes.count, let a = c.asciiValue, bytes[i] == a else { return false }
            i += 1
            return true
        }

        mutating func digit() -> Int? {
            guard i < bytes.count, (0x30...0x39).contains(bytes[i]) else { return nil }
            defer { i += 1 }
            return Int(bytes[i] - 0x30)
        }

        mutating func digits(_ n: Int) -> Int? {
            var v = 0
            for _ in 0..<n {
                guard let d = digit() else { return nil }
                v = v * 10 + d
            }
            return v
        }
    }
}
