import Foundation

public enum Timestamp {
    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-22T00:40:27.123Z`.
    public static func rfc3339(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .omitted))
    }
}
