import Foundation

/// One wake-up of a `local_time` job: every zone whose clocks read the job's time at the same
/// instant (one per distinct UTC offset, about 40, however many zones the audience has).
public struct Wave: Sendable, Equatable {
    /// The instant the zones' clocks read the job's local time.
    public var at: Date
    /// The zones (IANA names, the devices' effective zones), sorted.
    public var zones: [String]
    /// Devices in those zones when the job was planned.
    public var devices: Int

    public init(at: Date, zones: [String], devices: Int) {
        self.at = at
        self.zones = zones
        self.devices = devices
    }
}

/// Devices the planner places together: those of one `key` (for the engine an app and a
/// registered zone; for `plan(zones:)` the zone's name) in one effective zone, under the quiet
/// hours that apply to them (nil: none, or an urgent push that ignores them).
public struct ZoneGroup<Key: Sendable>: Sendable {
    public var key: Key
    /// The IANA name its devices' clocks follow (an unknown name is UTC).
    public var zone: String
    public var quiet: QuietHours?
    public var devices: Int

    public init(key: Key, zone: String, quiet: QuietHours?, devices: Int) {
        self.key = key
        self.zone = zone
        self.quiet = quiet
        self.devices = devices
    }
}

/// A wave and the keys of the groups it sends to (the engine restricts the wave's run to them).
public struct KeyedWave<Key: Sendable>: Sendable {
    public var wave: Wave
    public var keys: [Key]

    public init(wave: Wave, keys: [Key]) {
        self.wave = wave
        self.keys = keys
    }
}

/// Plans a `local_time` job's waves: each zone's instant for the local wall time, zones with the
/// same instant in one wave. Pure: the zone data is Foundation's (`TimeZone`, the system tzdata).
///
/// The wall time is resolved as the zone data says, by `Calendar` with `matchingPolicy: .nextTime`
/// and `repeatedTimePolicy: .first`:
/// - a time that does not exist that day (the DST gap, e.g. 02:30 in New York on the March
///   change) is the first instant after the gap (03:00 EDT): the clock never reads 02:30, and
///   03:00 is when it first reads something later;
/// - a time that happens twice (the overlap, 01:30 on the November change) is the first of the
///   two (01:30 EDT), so a device is sent once.
public enum WavePlanner {
    /// The instant `zone`'s clocks read `time` on `date`.
    public static func instant(of time: LocalTime, on date: LocalDate, in zone: TimeZone) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let day = calendar.date(from: DateComponents(year: date.year, month: date.month, day: date.day)) else { return nil }
        return calendar.date(bySettingHour: time.hour, minute: time.minute, second: 0, of: day,
                             matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)
    }

    /// The local date in `zone` at `instant`.
    public static func date(at instant: Date, in zone: TimeZone) -> LocalDate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day], from: instant)
        return LocalDate(year: c.year ?? 1970, month: c.month ?? 1, day: c.day ?? 1)
    }

    /// The instant `zone`'s clocks read `time`: on `date` when given, else the first time at or
    /// after `anchor` (the moment the job was first planned: today in that zone, or tomorrow if
    /// the time has passed there).
    public static func instant(of time: LocalTime, date: LocalDate?, in zone: TimeZone, anchor: Date) -> Date? {
        if let date { return instant(of: time, on: date, in: zone) }
        let today = self.date(at: anchor, in: zone)
        guard let first = instant(of: time, on: today, in: zone) else { return nil }
        if first >= anchor { return first }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let noon = calendar.date(byAdding: .hour, value: 36, to: first) else { return nil }
        return instant(of: time, on: self.date(at: noon, in: zone), in: zone).flatMap { $0 >= anchor ? $0 : nil }
    }

    /// The local wall time in `zone` at `instant`.
    public static func wallTime(at instant: Date, in zone: TimeZone) -> LocalTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.hour, .minute], from: instant)
        return LocalTime(hour: c.hour ?? 0, minute: c.minute ?? 0) ?? LocalTime(hour: 0, minute: 0)!
    }

    /// `instant`, or, when `zone`'s clock then reads a time inside `quiet`, the end of those
    /// quiet hours (the first time after `instant` the clock reads `quiet.end`).
    public static func deferred(_ instant: Date, by quiet: QuietHours?, in zone: TimeZone) -> Date {
        guard let quiet, quiet.contains(wallTime(at: instant, in: zone)) else { return instant }
        return self.instant(of: quiet.end, date: nil, in: zone, anchor: instant) ?? instant
    }

    /// When a device in zone `name` gets a `local_time` job's push: its clock reads `time` (on
    /// `date`, else next after `anchor`), deferred past `quiet`. An unknown zone (the registry
    /// may hold a name a later tzdata dropped) is UTC.
    public static func instant(for name: String, time: LocalTime, date: LocalDate?, anchor: Date, quiet: QuietHours? = nil) -> Date? {
        let zone = ZoneName.timeZone(name) ?? TimeZone(identifier: "UTC")!
        return instant(of: time, date: date, in: zone, anchor: anchor).map { deferred($0, by: quiet, in: zone) }
    }

    /// The waves for devices counted per effective zone (`zones`: IANA name → devices), soonest
    /// first; a zone whose time falls in `quiet` waits for their end (a wave of its own).
    public static func plan(zones: [String: Int], time: LocalTime, date: LocalDate?, anchor: Date, quiet: QuietHours? = nil) -> [Wave] {
        plan(zones.map { ZoneGroup(key: $0.key, zone: $0.key, quiet: quiet, devices: $0.value) },
             local: LocalDelivery(time: time, date: date), anchor: anchor).map(\.wave)
    }

    /// The waves for `groups`, soonest first, each with the keys of the groups it sends to: a
    /// group's instant is when its zone's clock reads `local`'s time (on its date, else next
    /// after `anchor`), or, for a job without `local_time` (nil), `anchor` itself; either is
    /// deferred past the group's quiet hours. Groups with one instant share a wave; a group with
    /// no device, or whose time its zone never reads, has none.
    public static func plan<Key: Sendable>(_ groups: [ZoneGroup<Key>], local: LocalDelivery?, anchor: Date) -> [KeyedWave<Key>] {
        var byInstant: [Date: (keys: [Key], zones: Set<String>, devices: Int)] = [:]
        for group in groups where group.devices > 0 {
            let at: Date
            if let local {
                guard let due = instant(for: group.zone, time: local.time, date: local.date, anchor: anchor, quiet: group.quiet) else { continue }
                at = due
            } else {
                at = deferred(anchor, by: group.quiet, in: ZoneName.timeZone(group.zone) ?? TimeZone(identifier: "UTC")!)
            }
            byInstant[at, default: ([], [], 0)].keys.append(group.key)
            byInstant[at, default: ([], [], 0)].zones.insert(group.zone)
            byInstant[at, default: ([], [], 0)].devices += group.devices
        }
        return byInstant.map { at, wave in KeyedWave(wave: Wave(at: at, zones: wave.zones.sorted(), devices: wave.devices), keys: wave.keys) }
            .sorted { $0.wave.at < $1.wave.at }
    }

    /// Whether a wave due at `due` still goes out at `now`: on time or less than `grace` late.
    /// Otherwise it is skipped (a push hours after its local time is the one the job promised not to send).
    public static func isWithinGrace(due: Date, now: Date, grace: TimeInterval) -> Bool {
        now.timeIntervalSince(due) < grace
    }

    /// The latest instant any zone's clock reads `time` on `date` (UTC−12, the last zone): after
    /// it, no wave of the job could still run.
    public static func lastInstant(of time: LocalTime, on date: LocalDate) -> Date? {
        TimeZone(secondsFromGMT: -12 * 3600).flatMap { instant(of: time, on: date, in: $0) }
    }
}
