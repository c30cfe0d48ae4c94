import PushspoolCore

/// What a registration or an unregistration changed: the device as stored (as it was, for an
/// unregistration), the id its handle moved from, and each hub write with its outcome.
public struct RegistrationChange: Sendable {
    public var device: Device
    public var movedFrom: String?
    public var hub: [InstallationWriter.Outcome]
    /// The hub writes are queued (`HubQueue`), not done yet: `GET /v1/devices/{id}` tells when.
    public var hubPending = false

    public init(device: Device, movedFrom: String?, hub: [InstallationWriter.Outcome]) {
        self.device = device
        self.movedFrom = movedFrom
        self.hub = hub
    }

    /// The hub did not take every write (the local registry has the change).
    public var hubFailed: Bool { hub.contains { !$0.ok } }
}
