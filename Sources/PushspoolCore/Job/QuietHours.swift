/// `quiet_hours: {"start": "22:00", "end": "08:00"}` (per app in config, or per job): a device
/// whose local clock is inside them gets its push at their end instead. The span may cross
/// midnight (22:00–08:00) or not (13:00–14:00); `start` is inside, `end` is not.
public struct QuietHours: Sendable, Equatable {
    public var start: LocalTime
    public var end: LocalTime

    public init(start: LocalTime, end: LocalTime) {
        self.start = start
        self.end = end
    }

    /// Whether a clock reading `time` is inside the quiet hours.
    public func contains(_ time: LocalTime) -> Bool {
        start < end ? (start <= time && time < end) : (time >= start || time < end)
    }

    /// The two fields it is written with, wherever it is written (a job, an app).
    public static let fields = ["start", "end"]

    /// `{"start": "HH:MM", "end": "HH:MM"}`, each problem named under `field`.
    static func parse(_ value: JSONValue, field: String, problems: inout Problems) -> QuietHours? {
        guard case .object(let pairs) = value else {
            problems.add(field, "must be an object {\"start\": \"HH:MM\", \"end\": \"HH:MM\"}, got \(value.typeName)")
            return nil
        }
        var start: LocalTime?, end: LocalTime?
        for (key, v) in pairs {
            guard fields.contains(key) else {
                problems.add("\(field).\(key)", "unknown field (expected \(fields.joined(separator: ", ")))")
                continue
            }
            let t = v.stringValue.flatMap(LocalTime.init)
            if t == nil { problems.add("\(field).\(key)", "must be a wall-clock time \"HH:MM\" (24-hour), got \(JobParser.describe(v))") }
            if key == "start" { start = t } else { end = t }
        }
        for (key, t) in [("start", start), ("end", end)] where t == nil && !pairs.contains(where: { $0.0 == key }) {
            problems.add("\(field).\(key)", "required (\"HH:MM\")")
        }
        guard let start, let end else { return nil }
        if start == end {
            problems.add(field, "start and end are both \(start): quiet hours need a span (to be quiet all day, do not send)")
            return nil
        }
        return QuietHours(start: start, end: end)
    }
}

/// `local_time` (and `local_date`) on a send job: each device gets the push when its own clock
/// reads that time (§ On people's clocks).
public struct LocalDelivery: Sendable, Equatable {
    public var time: LocalTime
    /// The day in each device's zone; nil: the next time its clock reads `time` after the job
    /// was first planned.
    public var date: LocalDate?

    public init(time: LocalTime, date: LocalDate? = nil) {
        self.time = time
        self.date = date
    }
}
