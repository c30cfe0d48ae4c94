import Foundation

/// `local_time`, `local_date` and `quiet_hours` on a send job (§ On people's clocks).
extension JobParser {
    static let clockFields: Set<String> = ["local_time", "local_date", "quiet_hours"]

    /// The job's clock fields as written (nil: absent), checked together.
    struct ClockFields {
        var localTime: JSONValue?
        var localDate: JSONValue?
        var quietHours: JSONValue?

        mutating func take(_ key: String, _ value: JSONValue) {
            switch key {
            case "local_time": localTime = value
            case "local_date": localDate = value
            default: quietHours = value
            }
        }

        /// The job's local delivery and quiet hours; `now`: a `local_date` whose last zone has
        /// passed its time by then could never run.
        func check(notBefore: Bool, now: Date, problems: inout Problems) -> (LocalDelivery?, QuietHours?) {
            let quiet = quietHours.flatMap { QuietHours.parse($0, field: "quiet_hours", problems: &problems) }
            guard let localTime else {
                if localDate != nil { problems.add("local_date", "goes with local_time (the time of day on that date)") }
                return (nil, quiet)
            }
            guard let text = localTime.stringValue, let time = LocalTime(text) else {
                problems.add("local_time", "must be a wall-clock time \"HH:MM\" (24-hour, e.g. \"09:00\"), got \(describe(localTime))")
                return (nil, quiet)
            }
            if notBefore {
                problems.add("local_time", "not allowed together with not_before (each device's own clock says when it is sent)")
            }
            var date: LocalDate?
            if let localDate {
                date = localDate.stringValue.flatMap(LocalDate.init)
                if date == nil {
                    problems.add("local_date", "must be a date \"YYYY-MM-DD\" (e.g. \"2026-12-24\"), got \(describe(localDate))")
                } else if let date, let last = WavePlanner.lastInstant(of: time, on: date), last < now {
                    problems.add("local_date", "\(date) is past: no zone's clock will read \(time) on it again")
                }
            }
            return (LocalDelivery(time: time, date: date), quiet)
        }
    }
}
