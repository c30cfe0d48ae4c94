import Foundation

/// A wall-clock time of day, `HH:MM` (24-hour): a job's `local_time` and quiet hours' bounds.
public struct LocalTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// Exactly `HH:MM`, two digits each.
    public init?(_ text: String) {
        let b = Array(text.utf8)
        func digit(_ i: Int) -> Int? { b[i] >= 0x30 && b[i] <= 0x39 ? Int(b[i] - 0x30) : nil }
        guard b.count == 5, b[2] == UInt8(ascii: ":"), let h1 = digit(0), let h2 = digit(1), let m1 = digit(3), let m2 = digit(4) else {
            return nil
        }
        self.init(hour: h1 * 10 + h2, minute: m1 * 10 + m2)
    }

    /// Minutes since midnight.
    public var minutes: Int { hour * 60 + minute }

    public var description: String {
        (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }

    public static func < (a: LocalTime, b: LocalTime) -> Bool { a.minutes < b.minutes }
}

/// A calendar date, `YYYY-MM-DD` (a job's `local_date`): a day that exists in the Gregorian calendar.
public struct LocalDate: Sendable, Hashable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), (1...12).contains(m), (1...31).contains(d),
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "-") }) else { return nil }
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        // 2026-02-30 is not a day: Calendar would roll it into March.
        guard let date = utc.date(from: DateComponents(year: y, month: m, day: d)),
              utc.component(.day, from: date) == d else { return nil }
        (year, month, day) = (y, m, d)
    }

    init(year: Int, month: Int, day: Int) {
        (self.year, self.month, self.day) = (year, month, day)
    }

    public var description: String {
        String(year) + "-" + (month < 10 ? "0" : "") + "\(month)-" + (day < 10 ? "0" : "") + "\(day)"
    }
}
