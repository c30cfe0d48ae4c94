import PushspoolCore

/// What a registration or an unregistration changed: the device as stored (as it was, for an
/// unregistration), the id its handle moved from, and each hub write with its outcome.
public struct RegistrationChange: Sendable {
    public var device: Device
    public var movedFrom: String?
    public var hub: [InstallationWriter.Outcome]

    public init(device: Device, movedFrom: String?, hub: [InstallationWriter.Outcome]) {
        self.device = device
        self.movedFrom = movedFrom
        self.hub = hub
    }

    /// The hub did not take every write (the local registry has the change).
    public var hubFailed: Bool { hub.contains { !$0.ok } }
}

/// Why a registration change was not made. `busy` and `unavailable` are worth trying again later
/// (the registry is write-locked by another process past its wait; its database server cannot be
/// reached); `invalid` names the field at fault; `other` is a refusal of the database (disk full).
public struct RegistrationError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case invalid(field: String), busy, unavailable, other
    }

    public var kind: Kind
    /// One sentence; for `invalid`, starting with the field.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// A registry failure, by its kind.
    init(_ error: any Error) {
        guard let e = error as? RegistryError else {
            self.init(.other, "\(error)")
            return
        }
        switch e.kind {
        case .busy: self.init(.busy, e.message)
        case .unavailable: self.init(.unavailable, e.message)
        case .refused: self.init(.other, e.message)
        }
    }

    public var description: String { message }
}
