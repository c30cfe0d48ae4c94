import Foundation
import PushspoolCore

/// The one registration path: register and unregister jobs, `pushspool register`/`unregister` and
/// `serve`'s registration requests all change the registry through it, so a registration means
/// the same wherever it comes from. Callers check their input with `RegistrationRules` first;
/// the service applies it: the registry change, then, for a platform routed to a hub, the hub's
/// installation (the local registry stays the record: a hub write that fails is reported in the
/// change, never undone locally, and `pushspool hub sync` repairs it).
///
/// Thread-safe (the registry and the writer are). With a `HubQueue` (`serve`), hub writes are
/// marked durably and written in the background: the caller never waits for the hub. Without
/// one (the CLI, register jobs), hub writes block the caller until the hub answered or the retry
/// policy gave up.
public final class RegistrationService: Sendable {
    public let registry: any DeviceRegistry
    public let hub: InstallationWriter?
    public let hubQueue: HubQueue?

    public init(registry: any DeviceRegistry, hub: InstallationWriter?, hubQueue: HubQueue? = nil) {
        self.registry = registry
        self.hub = hub
        self.hubQueue = hubQueue
    }

    /// Upsert (a nil id reuses the id holding the handle, else a new lowercase UUID; a handle held
    /// by another id moves) and, for a hub-routed platform, the hub installation (a move deletes
    /// the old installation first). A reservation of that id is consumed.
    public func register(_ r: Registration, now: Date) throws(RegistrationError) -> RegistrationChange {
        if let (field, message) = r.problem() { throw RegistrationError(.invalid(field: field), "\(field): \(message)") }
        if let hubQueue { return try registerQueued(r, now: now, queue: hubQueue) }
        let device: Device, movedFrom: String?
        do {
            (device, movedFrom) = try registry.upsertReportingMove(r, now: now)
        } catch {
            throw RegistrationError(error)
        }
        // Both writes are tried: a failed delete of the old installation must not keep the new
        // one off the hub.
        var changes: [InstallationChange] = [.put(device)]
        if let movedFrom { changes.insert(.delete(id: movedFrom), at: 0) }
        let outcomes = changes.compactMap { hub?.writeAndWait($0, platform: device.platform, app: device.app) }
        return RegistrationChange(device: device, movedFrom: movedFrom, hub: outcomes)
    }

    /// nil: no such device. An id the registry does not know is still deleted on the hub (it may
    /// have been removed locally while the hub was down); its outcome is not reported.
    public func unregister(_ which: Unregistration, now: Date) throws(RegistrationError) -> RegistrationChange? {
        if let hubQueue { return try unregisterQueued(which, queue: hubQueue) }
        return try removal(which).change
    }

    /// `register` with the hub writes queued: each installation it changes is marked pending
    /// before the registry changes (the id holding the handle too: a move deletes it on the hub).
    private func registerQueued(_ r: Registration, now: Date, queue: HubQueue) throws(RegistrationError) -> RegistrationChange {
        var held: [String] = []
        defer { held.forEach(queue.release) }
        let (device, movedFrom) = try Self.failures { () throws -> (Device, String?) in
            if queue.serves(r.platform), let id = r.id.map(Identifier.canonical) {
                try hold(id, r.platform, queue, &held)
                if let holder = try registry.device(handle: r.handle, app: r.app), holder.id != id, queue.serves(holder.platform) {
                    try hold(holder.id, holder.platform, queue, &held)
                }
            }
            let (device, movedFrom) = try registry.upsertReportingMove(r, now: now)
            // A new id (none given), or a move that was not seen before: marked now.
            if queue.serves(device.platform), !held.contains(device.id) { try hold(device.id, device.platform, queue, &held) }
            if let movedFrom, !held.contains(movedFrom), let platform = queue.platforms.min() {
                try hold(movedFrom, platform, queue, &held)
            }
            return (device, movedFrom)
        }
        var change = RegistrationChange(device: device, movedFrom: movedFrom, hub: [])
        change.hubPending = !held.isEmpty
        return change
    }

    /// `unregister` with the hub write queued (an unknown id is still deleted on the hub).
    private func unregisterQueued(_ which: Unregistration, queue: HubQueue) throws(RegistrationError) -> RegistrationChange? {
        var held: [String] = []
        defer { held.forEach(queue.release) }
        return try Self.failures { () throws -> RegistrationChange? in
            let device: Device?, removed: Bool
            switch which {
            case .id(let given):
                let id = Identifier.canonical(given)
                device = try registry.device(id: id)
                if let platform = device.map(\.platform).flatMap({ queue.serves($0) ? $0 : nil }) ?? (device == nil ? queue.platforms.min() : nil) {
                    try hold(id, platform, queue, &held)
                }
                removed = try registry.remove(id: id)
                try registry.releaseReservation(id: id)
            case .handle(let handle, let app):
                device = try registry.device(handle: handle, app: app)
                if let device, queue.serves(device.platform) { try hold(device.id, device.platform, queue, &held) }
                removed = try registry.remove(handle: handle, app: app)
            }
            guard removed, let device else { return nil }
            var change = RegistrationChange(device: device, movedFrom: nil, hub: [])
            change.hubPending = !held.isEmpty
            return change
        }
    }

    /// `body`'s registry and queue failures as `RegistrationError`s.
    private static func failures<T>(_ body: () throws -> T) throws(RegistrationError) -> T {
        do {
            return try body()
        } catch let error as RegistryError {
            throw RegistrationError(error)
        } catch let error as RegistrationError {
            throw error
        } catch {
            throw RegistrationError(.other, "\(error)")
        }
    }

    private func hold(_ id: String, _ platform: Platform, _ queue: HubQueue, _ held: inout [String]) throws(RegistrationError) {
        do {
            try queue.hold(id, platform: platform)
        } catch {
            throw RegistrationError(.other, "the hub's queue in the spool could not be written: \(error)")
        }
        held.append(id)
    }

    /// `unregister`, also giving the hub outcomes when there was no such device here.
    func removal(_ which: Unregistration) throws(RegistrationError) -> (change: RegistrationChange?, hub: [InstallationWriter.Outcome]) {
        let device: Device?, removed: Bool
        do {
            switch which {
            case .id(let id):
                let id = Identifier.canonical(id)
                device = try registry.device(id: id)
                removed = try registry.remove(id: id)
                try registry.releaseReservation(id: id)
            case .handle(let handle, let app):
                device = try registry.device(handle: handle, app: app)
                removed = try registry.remove(handle: handle, app: app)
            }
        } catch {
            throw RegistrationError(error)
        }
        let installation: String? = if case .id(let id) = which { Identifier.canonical(id) } else { device?.id }
        // A device already gone here may still be on the hub: any hub-routed platform's hub.
        let app = device?.app
        let platform = device?.platform ?? (installation == nil ? nil : hub?.platforms.min())
        var outcomes: [InstallationWriter.Outcome] = []
        if let installation, let platform, let outcome = hub?.writeAndWait(.delete(id: installation), platform: platform, app: app) {
            outcomes.append(outcome)
        }
        guard removed, let device else { return (nil, outcomes) }
        return (RegistrationChange(device: device, movedFrom: nil, hub: outcomes), outcomes)
    }

    public func device(id: String) throws(RegistrationError) -> Device? {
        do { return try registry.device(id: Identifier.canonical(id)) } catch { throw RegistrationError(error) }
    }

    /// The device holding `handle` in `app` (nil: the default app): a handle is unique per app.
    public func device(handle: String, app: String? = nil) throws(RegistrationError) -> Device? {
        do { return try registry.device(handle: handle, app: app) } catch { throw RegistrationError(error) }
    }

    /// The tutorial's `POST /api/register`: a new lowercase UUID recorded as handed out to `owner`.
    public func reserveID(owner: String, now: Date) throws(RegistrationError) -> String {
        let id = UUID().uuidString.lowercased()
        do { try registry.reserve(id: id, owner: owner, now: now) } catch { throw RegistrationError(error) }
        return id
    }

    /// The owner `id` was handed out to, if it was handed out within the last 7 days and neither
    /// registered nor released since; else nil.
    public func reservation(id: String, now: Date) throws(RegistrationError) -> String? {
        let found: IDReservation?
        do { found = try registry.reservation(id: Identifier.canonical(id)) } catch { throw RegistrationError(error) }
        guard let found, now.timeIntervalSince(found.at) < IDReservation.lifetime else { return nil }
        return found.owner
    }
}
