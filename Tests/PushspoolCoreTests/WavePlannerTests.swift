import Foundation
import Testing
import PushspoolCore

/// The `local_time` wave planner: each zone's instant for a wall time as the zone data says
/// (DST gaps and overlaps included), zones with one instant in one wave.
@Suite struct WavePlannerTests {
    static func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }
    static func zone(_ name: String) -> TimeZone { TimeZone(identifier: name)! }
    static let nine = LocalTime("09:00")!

    @Test func halfAndQuarterHourZonesGetTheirOwnInstants() throws {
        let day = LocalDate("2026-03-08")!
        #expect(WavePlanner.instant(of: Self.nine, on: day, in: Self.zone("Asia/Kolkata")) == Self.utc("2026-03-08T03:30:00Z"))
        #expect(WavePlanner.instant(of: Self.nine, on: day, in: Self.zone("Asia/Kathmandu")) == Self.utc("2026-03-08T03:15:00Z"))
        // New York enters DST at 02:00 that day: 09:00 is already EDT (UTC−4).
        #expect(WavePlanner.instant(of: Self.nine, on: day, in: Self.zone("America/New_York")) == Self.utc("2026-03-08T13:00:00Z"))
    }

    /// 02:30 does not exist in New York on 2026-03-08 (02:00 EST → 03:00 EDT): the first instant
    /// after the gap, 03:00 EDT. In London on 2026-03-29, 01:30 → 02:00 BST.
    @Test func aTimeInTheDSTGapIsTheEndOfTheGap() {
        #expect(WavePlanner.instant(of: LocalTime("02:30")!, on: LocalDate("2026-03-08")!, in: Self.zone("America/New_York"))
                == Self.utc("2026-03-08T07:00:00Z"))
        #expect(WavePlanner.instant(of: LocalTime("01:30")!, on: LocalDate("2026-03-29")!, in: Self.zone("Europe/London"))
                == Self.utc("2026-03-29T01:00:00Z"))
    }

    /// 01:30 happens twice in New York on 2026-11-01 (EDT, then EST): the first, so once.
    @Test func aRepeatedTimeIsItsFirstOccurrence() {
        #expect(WavePlanner.instant(of: LocalTime("01:30")!, on: LocalDate("2026-11-01")!, in: Self.zone("America/New_York"))
                == Self.utc("2026-11-01T05:30:00Z"))
    }

    @Test func zonesWithOneOffsetShareAWave() {
        let waves = WavePlanner.plan(zones: ["Europe/Paris": 3, "Europe/Berlin": 2, "Asia/Kolkata": 4, "Asia/Kathmandu": 1,
                                             "America/New_York": 5, "UTC": 6, "Empty/Zone": 0],
                                     time: Self.nine, date: LocalDate("2026-06-01"), anchor: Self.utc("2026-05-31T00:00:00Z"))
        #expect(waves == [
            Wave(at: Self.utc("2026-06-01T03:15:00Z"), zones: ["Asia/Kathmandu"], devices: 1),
            Wave(at: Self.utc("2026-06-01T03:30:00Z"), zones: ["Asia/Kolkata"], devices: 4),
            Wave(at: Self.utc("2026-06-01T07:00:00Z"), zones: ["Europe/Berlin", "Europe/Paris"], devices: 5),
            Wave(at: Self.utc("2026-06-01T09:00:00Z"), zones: ["UTC"], devices: 6),
            Wave(at: Self.utc("2026-06-01T13:00:00Z"), zones: ["America/New_York"], devices: 5),
        ])
    }

    /// Without `local_date`: the next time each zone's clock reads the time after the job was
    /// planned: today where it has not yet, tomorrow where it has.
    @Test func withoutADateEachZoneGetsItsNextOccurrence() {
        let anchor = Self.utc("2026-06-01T05:00:00Z")   // 10:30 in Kolkata, 01:00 in New York
        #expect(WavePlanner.instant(of: Self.nine, date: nil, in: Self.zone("Asia/Kolkata"), anchor: anchor) == Self.utc("2026-06-02T03:30:00Z"))
        #expect(WavePlanner.instant(of: Self.nine, date: nil, in: Self.zone("America/New_York"), anchor: anchor) == Self.utc("2026-06-01T13:00:00Z"))
        // Across a DST change the next occurrence is still 09:00 local, 23 hours later.
        let beforeChange = Self.utc("2026-03-07T15:00:00Z")   // 10:00 EST, 7 March
        #expect(WavePlanner.instant(of: Self.nine, date: nil, in: Self.zone("America/New_York"), anchor: beforeChange)
                == Self.utc("2026-03-08T13:00:00Z"))
    }

    /// The engine's plan (`LocalTimeRun`) is this one: each group under its own quiet hours, a
    /// wave with the keys of every group in it, and a job without `local_time` planned at its
    /// anchor (05:00Z: 07:00 in Paris, 10:30 in Kolkata).
    @Test(arguments: [
        // local_time 09:00 on 2026-06-01: Paris's two keys share 07:00Z (its night quiet hours do
        // not hold 09:00); Kolkata's 09:00 is inside 08:00–11:00 and waits for 11:00, 05:30Z.
        (LocalDelivery(time: LocalTime("09:00")!, date: LocalDate("2026-06-01")),
         [("2026-06-01T05:30:00Z", ["Asia/Kolkata"], ["b/kolkata"], 4), ("2026-06-01T07:00:00Z", ["Europe/Paris"], ["a/paris", "b/paris"], 5)]),
        // No local_time: every group at the anchor, except Kolkata, then inside its quiet hours.
        (nil,
         [("2026-06-01T05:00:00Z", ["Europe/Paris"], ["a/paris", "b/paris"], 5), ("2026-06-01T05:30:00Z", ["Asia/Kolkata"], ["b/kolkata"], 4)]),
    ] as [(LocalDelivery?, [(String, [String], [String], Int)])])
    func groupsUnderTheirOwnQuietHours(local: LocalDelivery?, expected: [(String, [String], [String], Int)]) {
        let night = QuietHours(start: LocalTime("22:00")!, end: LocalTime("06:00")!)
        let morning = QuietHours(start: LocalTime("08:00")!, end: LocalTime("11:00")!)
        let groups = [ZoneGroup(key: "a/paris", zone: "Europe/Paris", quiet: nil, devices: 2),
                      ZoneGroup(key: "b/paris", zone: "Europe/Paris", quiet: night, devices: 3),
                      ZoneGroup(key: "b/kolkata", zone: "Asia/Kolkata", quiet: morning, devices: 4),
                      ZoneGroup(key: "a/empty", zone: "UTC", quiet: nil, devices: 0)]
        let waves = WavePlanner.plan(groups, local: local, anchor: Self.utc("2026-06-01T05:00:00Z"))
        let iso = ISO8601DateFormatter()
        #expect(waves.map { [iso.string(from: $0.wave.at)] + $0.wave.zones + $0.keys + ["\($0.wave.devices)"] }
                == expected.map { [$0.0] + $0.1 + $0.2 + ["\($0.3)"] })
    }

    @Test func graceIsStrictlyLessThanTheLimit() {
        let due = Self.utc("2026-06-01T09:00:00Z")
        #expect(WavePlanner.isWithinGrace(due: due, now: due.addingTimeInterval(3599), grace: 3600))
        #expect(!WavePlanner.isWithinGrace(due: due, now: due.addingTimeInterval(3600), grace: 3600))
        #expect(WavePlanner.isWithinGrace(due: due, now: due.addingTimeInterval(-10), grace: 0))
    }

    @Test func quietHoursAcrossMidnight() {
        let night = QuietHours(start: LocalTime("22:00")!, end: LocalTime("08:00")!)
        #expect(night.contains(LocalTime("23:59")!) && night.contains(LocalTime("00:00")!) && night.contains(LocalTime("22:00")!))
        #expect(!night.contains(LocalTime("08:00")!) && !night.contains(LocalTime("12:00")!))
        let lunch = QuietHours(start: LocalTime("12:00")!, end: LocalTime("13:30")!)
        #expect(lunch.contains(LocalTime("12:45")!) && !lunch.contains(LocalTime("13:30")!) && !lunch.contains(LocalTime("11:59")!))
    }

    @Test(arguments: ["9:00", "09:0", "24:00", "09:60", "0900", "09:00:00", " 09:00", "０９:００"])
    func notAWallClockTime(text: String) {
        #expect(LocalTime(text) == nil)
    }

    @Test(arguments: ["2026-02-30", "2026-13-01", "26-01-01", "2026-1-01", "2026-01-01T00:00"])
    func notADate(text: String) {
        #expect(LocalDate(text) == nil)
    }
}

/// The clock fields of a send job, each refused in one line naming it.
@Suite struct LocalTimeJobTests {
    static func problems(_ extra: String) -> String {
        let json = (#"{"broadcast": true, "pns": ["fcm"], "message": "hi", "# + extra + "}").utf8
        do {
            _ = try JobParser.parse(Array(json), fileName: "j.json")
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test func aValidLocalTimeJob() throws {
        let job = try JobParser.parse(Array(#"{"broadcast": true, "pns": ["fcm"], "message": "hi", "local_time": "09:00", "local_date": "2099-01-02", "quiet_hours": {"start": "22:00", "end": "07:30"}}"#.utf8), fileName: "j.json")
        guard case .send(let send) = job.kind else { Issue.record("not a send job"); return }
        #expect(send.localDelivery == LocalDelivery(time: LocalTime("09:00")!, date: LocalDate("2099-01-02")))
        #expect(send.quietHours == QuietHours(start: LocalTime("22:00")!, end: LocalTime("07:30")!))
    }

    @Test func refusals() {
        #expect(Self.problems(#""local_time": "9am""#).contains(#"local_time: must be a wall-clock time "HH:MM" (24-hour, e.g. "09:00"), got "9am""#))
        #expect(Self.problems(#""local_time": "09:00", "local_date": "2001-01-01""#).contains("local_date: 2001-01-01 is past: no zone's clock will read 09:00 on it again"))
        #expect(Self.problems(#""local_time": "09:00", "not_before": "2099-01-01T00:00:00Z""#).contains("local_time: not allowed together with not_before"))
        #expect(Self.problems(#""local_date": "2099-01-01""#).contains("local_date: goes with local_time"))
        #expect(Self.problems(#""quiet_hours": {"start": "22:00", "end": "22:00"}"#).contains("quiet_hours: start and end are both 22:00"))
        #expect(Self.problems(#""quiet_hours": {"start": "22:00"}"#).contains("quiet_hours.end: required"))
    }
}
