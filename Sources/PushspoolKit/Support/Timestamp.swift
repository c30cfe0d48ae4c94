import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum Timestamp {
    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-22T00:40:27.123Z`.
    ///
    /// Written by hand because every delivery line carries one: Foundation's ISO 8601 format
    /// style costs about 500 ns per call here, this about 100 ns. Same output for years
    /// 1970–9999, fractional seconds truncated to milliseconds as Foundation does (checked
    /// against `Date.ISO8601FormatStyle` by `TimestampTests`).
    public static func rfc3339(_ date: Date) -> String {
        String(unsafeUninitializedCapacity: 24) { out in
            write(date, into: out)
            return 24
        }
    }

    /// The 24 bytes of `rfc3339(date)` appended to `bytes` (a result-log line in the making).
    public static func append(_ date: Date, to bytes: inout [UInt8]) {
        // Written on the stack and appended as one block: appending 24 zeros as a repeated
        // element first went byte by byte (about 300 instructions on each outbox and result line).
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { write(date, into: $0.bindMemory(to: UInt8.self)) }
        withUnsafeBytes(of: &text) { bytes.append(contentsOf: $0) }
    }

    private static func write(_ date: Date, into out: UnsafeMutableBufferPointer<UInt8>) {
        let t = date.timeIntervalSince1970
        var seconds = t.rounded(.down)
        var ms = Int(((t - seconds) * 1000).rounded(.down))
        if ms >= 1000 { ms -= 1000; seconds += 1 }
        let (year, month, day, secondOfDay) = civil(Int(seconds))
        func put(_ value: Int, at: Int, width: Int) {
            // A plain loop: the stride's index went through generic copies per digit.
            var v = value, i = at + width
            while i > at {
                i -= 1
                out[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
        }
        put(year, at: 0, width: 4); out[4] = UInt8(ascii: "-")
        put(month, at: 5, width: 2); out[7] = UInt8(ascii: "-")
        put(day, at: 8, width: 2); out[10] = UInt8(ascii: "T")
        put(secondOfDay / 3600, at: 11, width: 2); out[13] = UInt8(ascii: ":")
        put(secondOfDay / 60 % 60, at: 14, width: 2); out[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, at: 17, width: 2); out[19] = UInt8(ascii: ".")
        put(ms, at: 20, width: 3); out[23] = UInt8(ascii: "Z")
    }

    /// The UTC calendar date and second of the day of `seconds` since 1970, by the proleptic
    /// Gregorian calendar's arithmetic (days to civil date, in 400-year eras). UTC has no time
    /// zone to look up: `gmtime_r` did the same sum behind a call and its `tm`, at about 300
    /// instructions on every result line.
    static func civil(_ seconds: Int) -> (year: Int, month: Int, day: Int, secondOfDay: Int) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let z = days + 719_468                                  // days since 0000-03-01
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097                         // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)   // from March 1st
        let mp = (5 * dayOfYear + 2) / 153                      // 0 = March
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, secondOfDay)
    }

    /// Parses what `rfc3339` writes (and RFC 3339 without fractional seconds), with the job
    /// parser's own RFC 3339 reader: an ISO8601DateFormatter made per call cost a third of a
    /// sandbox broadcast's CPU when a record was read before every batch of targets.
    public static func parse(_ text: String) -> Date? {
        RFC3339.date(from: text)
    }
}
