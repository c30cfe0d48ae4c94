import Foundation
import PushspoolCore

/// Applies a register or unregister job whose result log is open, through the one registration
/// path (`RegistrationService`, as the CLI and `serve` do), and says how it ended.
struct RegistrationExecutor: Sendable {
    let registrations: RegistrationService
    /// The registry's `updated_at` (its `wall` time).
    var clock: EngineClock = .system

    func register(_ registration: Registration, _ held: HeldJob, log: ResultLog, writeJobLine: Bool, cancel: Bool) -> JobReport.Outcome {
        if let ended = begin(held, log: log, pns: [registration.platform], writeJobLine: writeJobLine, cancel: cancel) { return ended }
        do throws(RegistrationError) {
            let change = try registrations.register(registration, now: clock.wall())
            let device = change.device
            log.append(ResultRecord.registration("register", device: device.id, platform: device.platform, tags: device.tags))
            return hubOutcome(change.hub, log: log)
                ?? .registry("registered \(device.id) (\(device.platform.rawValue), \(device.tags.count) tags)")
        } catch {
            return Self.failure(error)
        }
    }

    func unregister(_ which: Unregistration, _ held: HeldJob, log: ResultLog, writeJobLine: Bool, cancel: Bool) -> JobReport.Outcome {
        if let ended = begin(held, log: log, pns: [], writeJobLine: writeJobLine, cancel: cancel) { return ended }
        do throws(RegistrationError) {
            let (change, hub) = try registrations.removal(which)
            let what: String
            if case .id(let id) = which { what = id } else { what = change?.device.id ?? "(by handle)" }
            log.append(ResultRecord.registration(change != nil ? "unregister" : "unregister-not-found", device: what,
                                               platform: change?.device.platform, tags: nil))
            return hubOutcome(hub, log: log) ?? .registry(change != nil ? "unregistered \(what)" : "no such device \(what)")
        } catch {
            return Self.failure(error)
        }
    }

    /// The job line on a first run; a cancelled change ends here, unapplied (its log names no platform).
    private func begin(_ held: HeldJob, log: ResultLog, pns: [Platform], writeJobLine: Bool, cancel: Bool) -> JobReport.Outcome? {
        if writeJobLine {
            log.append(ResultRecord.job(held.job, file: held.name, receivedAt: held.receivedAt, pns: cancel ? [] : pns, targets: 1))
        }
        return cancel ? .cancelled(delivered: 0, failed: 0, unregistered: 0, retries: 0, notSent: 1, durationMS: 0) : nil
    }

    /// One `hub` line in the result log per hub write of a registration change. A change the hub
    /// never confirmed fails the job with the reason: the local registry already has it, and
    /// `hub sync` writes it once the hub answers.
    private func hubOutcome(_ outcomes: [InstallationWriter.Outcome], log: ResultLog) -> JobReport.Outcome? {
        for outcome in outcomes { log.append(ResultRecord.hub(outcome)) }
        let failures = outcomes.filter { !$0.ok }.map(\.summary)
        guard !failures.isEmpty else { return nil }
        return .failed(failures.joined(separator: "; ") + "; the local registry has the change, and `pushspool hub sync` writes it to the hub once it answers")
    }

    /// A registration that could not be written: while another process holds the registry (a large
    /// import) or its database server is unreachable, the job waits in active/ for the next run,
    /// instead of failing for good.
    static func failure(_ error: RegistrationError) -> JobReport.Outcome {
        switch error.kind {
        case .busy: return .interrupted(.registryBusy)
        case .unavailable: return .interrupted(.registryUnreachable(RegistryError.detail(error)))
        case .invalid, .other: return .failed("registry update failed: \(RegistryError.detail(error))")
        }
    }
}
