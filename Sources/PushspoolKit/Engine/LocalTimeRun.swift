import Foundation
import PushspoolCore

/// A `local_time` job's run (§ On people's clocks): plans its waves (`WavePlanner`: each zone
/// of the audience, counted per app and `tz` by the registry, at the instant its clock reads the
/// time, past its quiet hours; zones with one instant in one wave), sends every wave that is due
/// (`SendRun` over the wave's zones only), skips one found later than the grace, and stops at
/// the first wave still ahead (`StopReason.nextWave`): the job waits in `active/` and the
/// dispatcher's timer starts it again then.
///
/// Restart-safe through the result log: the plan's instant is written once (`planned`), so
/// every run plans the same waves; each ended wave is written (`sent`/`skipped`), so a restart
/// neither sends one again nor skips one; within a wave, the log's finished targets are not
/// sent again (as for any resumed job).
///
/// A job without `local_time` whose apps have quiet hours (or that has its own) runs here too:
/// every zone's wave is the job's planning instant, except zones then inside their quiet
/// hours, whose wave is the end of them; the grace rule is for `local_time` only.
struct LocalTimeRun {
    var run: SendRun
    /// Nil: a job for now, deferred by quiet hours only.
    let local: LocalDelivery?
    let clocks: PeoplesClocks

    /// Whether `send` runs here: it has `local_time`, or quiet hours apply to it (its own, or
    /// an app's, unless its interruption level ignores them) and every target is a registry
    /// device (a hub or FCM topic resolves its own audience: no device's clock is known).
    static func applies(to send: SendJob, plan: SendPlan, apps: [String: AppConfig]) -> Bool {
        if send.localDelivery != nil { return true }
        guard plan.hubSends.isEmpty, !ignoresQuietHours(send) else { return false }
        return send.quietHours != nil || apps.values.contains { $0.quietHours != nil }
    }

    /// `critical` and `time-sensitive` pushes go out in quiet hours too.
    static func ignoresQuietHours(_ send: SendJob) -> Bool {
        [.critical, .timeSensitive].contains(send.message.native.interruptionLevel)
    }

    func execute() -> SendRun.Result {
        let log = run.services.log, clock = clocks.clock
        var result = SendRun.Result(delivered: run.prior.delivered, failed: run.prior.failed, unregistered: run.prior.unregistered,
                                    retries: run.prior.retries, matched: 0)
        let anchor: Date
        if let text = run.prior.wavesPlannedAt, let planned = RFC3339.date(from: text) {
            anchor = planned
        } else {
            let text = Timestamp.rfc3339(clock.now())
            anchor = RFC3339.date(from: text) ?? clock.now()
            run.log.append(ResultRecord.wave(.init(status: "planned", at: text)))
        }
        let waves: [KeyedWave<ZoneKey>]
        do { waves = try plan(anchor: anchor) } catch {
            log.error("counting its audience per time zone failed: \(RegistryError.detail(error))", [(.job, run.job.id)])
            result.interruption = .registry(RegistryError.detail(error))
            return result
        }
        result.matched = waves.reduce(0) { $0 + $1.wave.devices }
        var prior = run.prior
        for planned in waves {
            let wave = planned.wave
            let text = Timestamp.rfc3339(wave.at)
            if prior.wavesEnded.contains(text) { continue }
            let now = clock.now()
            if wave.at > now {
                result.interruption = run.stop.reason ?? .nextWave(at: wave.at, text: text, devices: wave.devices)
                return result
            }
            let zones = wave.zones
            guard local == nil || WavePlanner.isWithinGrace(due: wave.at, now: now, grace: clocks.grace) else {
                let late = Int(now.timeIntervalSince(wave.at) / 60)
                run.log.append(ResultRecord.wave(.init(status: "skipped", at: text, zones: zones, devices: wave.devices,
                    reason: "\(late) minutes late (the dispatcher was not running at its time); local_time_grace_minutes is \(Int(clocks.grace / 60))")))
                log.warning("skipped the local-time wave of \(text) (\(wave.devices) devices): \(late) minutes late", [(.job, run.job.id)])
                continue
            }
            var waveRun = run
            waveRun.prior = prior
            waveRun.scope = .wave(planned.keys)
            let sent = waveRun.execute()
            (result.delivered, result.failed, result.unregistered, result.retries) = (sent.delivered, sent.failed, sent.unregistered, sent.retries)
            if let why = sent.interruption {
                result.interruption = why
                return result
            }
            run.log.append(ResultRecord.wave(.init(status: "sent", at: text, zones: zones, devices: sent.matched ?? 0)))
            (prior.delivered, prior.failed, prior.unregistered, prior.retries) = (sent.delivered, sent.failed, sent.unregistered, sent.retries)
            prior.wavesEnded.insert(text)
        }
        return result
    }

    /// The job's waves, soonest first (`WavePlanner`): the audience counted per app and `tz` by
    /// the registry, each pair in its effective zone (its `tz`, else its app's `default_tz`,
    /// else UTC) under the quiet hours that apply to it.
    func plan(anchor: Date) throws(RegistryError) -> [KeyedWave<ZoneKey>] {
        let send = run.send
        let counts = try run.services.registry.zoneCounts(platforms: Set(run.plan.direct), apps: run.plan.directApps,
                                                 tokenKind: send.message.native.tokenKind, matching: send.audience.tagExpression)
        let urgent = Self.ignoresQuietHours(send)
        let groups = counts.map { c in
            let app = clocks.apps[c.app]
            return ZoneGroup(key: c.key, zone: app?.zone(of: c.tz) ?? c.tz ?? "UTC", quiet: urgent ? nil : send.quietHours ?? app?.quietHours,
                             devices: c.devices)
        }
        return WavePlanner.plan(groups, local: local, anchor: anchor)
    }
}
