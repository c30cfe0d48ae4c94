import Foundation
import PushspoolCore

/// The one registration path: register and unregister jobs, `pushspool register`/`unregister` and
/// `serve`'s registration requests all change the registry through it, so a registration means
/// the same wherever it comes from. Callers check their input with `RegistrationRules` first;
/// the service applies it: the registry change, then, for a platform routed to a hub, the hub's
/// installation (the local registry stays the record: a hub write that fails is reported in the
/// change, never undone locally, and `pushspool hub sync` repairs it).
///
/// Thread-safe (the registry and the writer are). Hub writes block the caller until the hub
/// answered or the retry policy gave up.
public final class RegistrationService: Sendable {
    public let registry: any DeviceRegistry
    public let hub: InstallationWriter?

    public init(registry: any DeviceRegistry, hub: InstallationWriter?) {
        self.registry = registry
        self.hub = hub
    }

    /// Upsert (a nil id reuses the id holding the handle, else a new lowercase UUID; a handle held
    /// by another id moves) and, for a hub-routed platform, the hub installation (a move deletes
    /// the old installation first). A reservation of that id is consumed.
    public func register(_ r: Registration, now: Date) throws(RegistrationError) -> RegistrationChange {
        if let (field, message) = r.problem() { throw RegistrationError(.invalid(field: field), "\(field): \(message)") }
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
        try removal(which).change
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

    public func device(handle: String) throws(RegistrationError) -> Device? {
        do { return try registry.device(handle: handle) } catch { throw RegistrationError(error) }
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
