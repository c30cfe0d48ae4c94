import Foundation
import PushspoolCore

extension TargetOutcome {
    /// The registry entry this outcome removes, as the provider classified the answer: a device
    /// the service reported gone (`Disposition.deviceGone`), unless it re-registered after the
    /// time the service gives. A hub's installations are the hub's to expire: nothing to remove
    /// here. The outcome recorder only carries this out.
    func pruning(_ recipient: Recipient) -> GoneDevice? {
        guard status == .unregistered, case .device(let device) = recipient,
              case .deviceGone(let since) = result.disposition else { return nil }
        return GoneDevice(id: device.id, handle: device.handle, since: since.map { Date(timeIntervalSince1970: $0) })
    }
}

extension TargetOutcome {
    /// The handle change this outcome carries: a delivery whose answer named the device's new
    /// handle (ADM's canonical id).
    func handleChange(_ recipient: Recipient) -> HandleChange? {
        guard status == .delivered, case .device(let device) = recipient, let canonical = result.canonicalHandle,
              canonical != device.handle else { return nil }
        return HandleChange(id: device.id, handle: device.handle, canonical: canonical)
    }
}
