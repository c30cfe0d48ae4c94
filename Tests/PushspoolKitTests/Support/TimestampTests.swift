import Foundation
import Testing
@testable import PushspoolKit

/// `Timestamp.rfc3339` is hand-written for speed; it must print exactly what Foundation's ISO 8601
/// style printed before (result logs written by older builds are read back on resume).
struct TimestampTests {
    static func foundation(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true)
            .timeSeparator(.colon).timeZone(separator: .omitted))
    }

    @Test(arguments: [0, 0.999, 0.9995, 0.9999999, 951_782_400.5, 1_763_771_227.123, 1_763_771_227.1235,
                      1_763_771_227.9999, 4_102_444_799.999])
    func edgeCases(_ t: Double) {
        let d = Date(timeIntervalSince1970: t)
        #expect(Timestamp.rfc3339(d) == Self.foundation(d))
    }

    /// Truncated, not rounded: .123 is stored as .12299…, and Foundation printed .122 for it too.
    @Test func knownValue() {
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 1_763_771_227.125)) == "2025-11-22T00:27:07.125Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 1_763_771_227.123)) == "2025-11-22T00:27:07.122Z")
    }

    @Test func matchesFoundationOnRandomTimes() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let d = Date(timeIntervalSince1970: Double.random(in: 0..<4_102_444_800, using: &rng))
            #expect(Timestamp.rfc3339(d) == Self.foundation(d))
            let ms = Date(timeIntervalSince1970: Double(Int.random(in: 0..<4_102_444_800_000, using: &rng)) / 1000)
            #expect(Timestamp.rfc3339(ms) == Self.foundation(ms))
        }
    }

    /// The calendar arithmetic against the C library's `gmtime_r` at every midnight from 1970 to
    /// 2100 and the second before it (leap days, 2000's and 2100's century rules included).
    @Test func civilDateMatchesGmtimeAtEveryDayBoundary() {
        var mismatches = 0
        for day in 0..<47_482 {
            for seconds in [day * 86_400, day * 86_400 + 86_399] {
                var time = time_t(seconds), parts = tm()
                gmtime_r(&time, &parts)
                let c = Timestamp.civil(seconds)
                if c.year != Int(parts.tm_year) + 1900 || c.month != Int(parts.tm_mon) + 1 || c.day != Int(parts.tm_mday)
                    || c.secondOfDay != Int(parts.tm_hour) * 3600 + Int(parts.tm_min) * 60 + Int(parts.tm_sec) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
    }
}
