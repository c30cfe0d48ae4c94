import PushspoolCore

/// What a `local_time` run (`LocalTimeRun`) judges its waves by: the time it is (`EngineClock`),
/// the grace of a late wave (`local_time_grace_minutes`, in seconds), and each app's
/// `default_tz` and `quiet_hours`.
struct PeoplesClocks: Sendable {
    var clock: EngineClock = .system
    var grace: Double = 3600
    var apps: [String: AppConfig] = [:]
}
