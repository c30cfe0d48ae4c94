import Foundation
import PushspoolCore

/// Gives each push of a tracked job its notification id: the job's number (handed out by the
/// registry when the job is first planned, the same on every host and every resume) and the
/// registry's MAC key, from which each device's id is derived as its push is sent. Nothing is
/// written per device.
struct NotificationTagger: Sendable {
    let job: Int64
    let mac: NotificationMAC

    /// The notification rendered for the job, with `device`'s id (registry key `key`) in it.
    func stamp(_ notification: consuming RenderedNotification, for device: Device, key: Int64) -> RenderedNotification {
        notification.stamped(mac.idText(job: job, device: key, platform: device.platform, installationID: device.id))
    }

    /// A hub send's id: one per job and platform (device key 0, no installation id).
    func hubID(_ platform: Platform) -> String {
        mac.id(job: job, device: 0, platform: platform, installationID: "").text
    }

    /// Whether a job's pushes carry ids: `secure`, `track`, or an app of the job with `track`.
    static func tracking(_ send: SendJob, apps: [String], configs: [String: AppConfig]) -> NotificationTracking {
        if send.tracking != .off { return send.tracking }
        return apps.contains { configs[$0]?.track == true } ? .tracked : .off
    }

    /// Records the job in the registry (a secure job's content, once) and makes its tagger; a job
    /// recorded before (a resume, a chunk on another host) keeps its number, time and content.
    static func make(_ job: Job, _ send: SendJob, apps: [String], registry: any NotificationStore, now: Date) throws(RegistryError) -> NotificationTagger {
        let tracked = TrackedJob(id: job.id, secure: send.secure, content: send.secure ? SecureJobContent(send) : nil,
                                 audience: send.audience.hubTags, apps: apps, platforms: send.platforms, sentAt: now,
                                 expiresAt: send.secure ? now.addingTimeInterval(TimeInterval(send.contentLifetime)) : nil,
                                 file: job.file)
        let number = try registry.trackJob(tracked)
        return NotificationTagger(job: number, mac: NotificationMAC(key: try registry.notificationKey()))
    }
}
