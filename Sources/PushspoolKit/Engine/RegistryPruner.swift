import Foundation
import PushspoolCore
import Synchronization

/// Deletes devices the services reported gone, in batches (one registry transaction each), on a
/// queue of its own. `finish` waits for what is queued.
///
/// With webhooks taking `device.unregistered`, devices are gathered into events of up to 1,000
/// (`WebhookEvent.maxDevicesPerEvent`; the rest at `finish`), and each event is on disk before
/// its devices leave the registry: a crash between the two repeats the event, never loses it.
final class RegistryPruner: Sendable {
    private let batches: BatchQueue<(GoneDevice, WebhookEvent.GoneDevice?)>
    private final class Gathered: Sendable { let items = Mutex<[(GoneDevice, WebhookEvent.GoneDevice?)]>([]) }
    private let gathered = Gathered()
    private let flush: @Sendable ([(GoneDevice, WebhookEvent.GoneDevice?)]) -> Void
    private let wantsEvents: Bool
    /// Handles a service replaced (ADM's canonical ids), written on the same kind of queue.
    private let replacements: BatchQueue<HandleChange>

    init(registry: any DeviceRegistry, log: Log, jobID: String, webhooks: Webhooks? = nil, clock: EngineClock = .system) {
        let flush: @Sendable ([(GoneDevice, WebhookEvent.GoneDevice?)]) -> Void = { batch in
            guard !batch.isEmpty else { return }
            if let webhooks {
                do {
                    try webhooks.devicesUnregistered(batch.compactMap(\.1), jobID: jobID)
                } catch {
                    log.error("could not write device.unregistered events for \(batch.count) device(s): \(error)", [(.job, jobID)])
                }
            }
            let gone = batch.map(\.0)
            do {
                try registry.removeGone(gone)
            } catch {
                log.error("could not remove \(gone.count) gone device(s) from the registry (\(gone[0].id)…): \(RegistryError.detail(error))", [(.job, jobID)])
            }
        }
        self.flush = flush
        wantsEvents = webhooks != nil
        replacements = BatchQueue(label: "pushspool.replace.\(jobID)") { changes in
            for change in changes {
                do {
                    try registry.replaceHandle(change, now: clock.wall())
                } catch {
                    log.error("could not replace the handle of device \(change.id) with the one its service named: \(RegistryError.detail(error))", [(.job, jobID)])
                }
            }
        }
        let gathered = gathered, gathering = webhooks != nil
        batches = BatchQueue(label: "pushspool.prune.\(jobID)") { batch in
            guard gathering else { return flush(batch) }
            let full = gathered.items.withLock { g -> [(GoneDevice, WebhookEvent.GoneDevice?)] in
                g += batch
                guard g.count >= WebhookEvent.maxDevicesPerEvent else { return [] }
                defer { g.removeAll() }
                return g
            }
            flush(full)
        }
    }

    func remove(_ device: GoneDevice) { batches.add((device, nil)) }

    /// The service named the device's new handle: the registry holds it instead of the one sent.
    func replace(_ change: HandleChange) { replacements.add(change) }

    /// `device`, as `platform`'s service answered `result`: its webhook event names the device,
    /// its app and platform and the service's reason, never its handle.
    func remove(_ device: GoneDevice, platform: Platform, recipient: Recipient, result: ProviderResult) {
        guard wantsEvents, case .device(let d) = recipient else { return remove(device) }
        batches.add((device, WebhookEvent.GoneDevice(device: device.id, app: d.app, platform: platform,
                                                     reason: result.reason ?? result.code ?? "unregistered")))
    }

    /// Waits until every queued device has been removed (or failed to be), the ones gathered
    /// for a webhook event included.
    func finish() {
        replacements.wait()
        batches.wait()
        flush(gathered.items.withLock { g in defer { g.removeAll() }; return g })
    }
}
