import PushspoolCore

/// The cap gate on the send path of a capped job (`CapGate`): the audience's devices wait here
/// in registry order, a batch of `CapGate.batchSize` at a time. A full batch is reserved in the
/// registry on a queue of its own (`CapGate.Ahead`) while the batch before it goes on to the next
/// stage, each device with whether it is over its cap; only the devices still to send are
/// reserved (`toSend`). The stage is the producer's own (not shared between threads).
final class CapStage {
    typealias Target = (device: Device, key: Int64)
    private let gate: CapGate
    private let toSend: (Device) -> Bool
    private let wait: ProducerWait
    private var held: [Target] = []
    private var ahead: (batch: [Target], reservation: CapGate.Ahead)?
    /// Why the stage stopped, when a reservation failed.
    private(set) var failure: RegistryError?

    /// The next stage (`next`, given to `offer` and `finish`) gets a device, its key and whether
    /// it is over its cap, and says whether to go on.
    typealias Next = (Device, Int64, _ capped: Bool) -> Bool

    init(gate: CapGate, toSend: @escaping (Device) -> Bool, wait: ProducerWait) {
        self.gate = gate
        self.toSend = toSend
        self.wait = wait
        held.reserveCapacity(CapGate.batchSize)
    }

    /// Takes the audience's next device; false: stop producing.
    func offer(_ device: Device, key: Int64, then next: Next) -> Bool {
        held.append((device, key))
        return held.count < CapGate.batchSize || reserveHeld(then: next)
    }

    /// After the audience's last device: the devices still here go on. False: stopped.
    func finish(then next: Next) -> Bool {
        if !held.isEmpty, !reserveHeld(then: next) { return false }
        return passReserved(then: next)
    }

    /// Once the producer is done with the stage (also when it stopped early): a reservation still
    /// running is waited for, so that it is over before the registry is let go.
    func close() {
        guard let (_, reservation) = ahead else { return }
        ahead = nil
        wait.release()
        _ = reservation.wait()
    }

    /// Starts reserving the held devices, then passes on the batch reserved before.
    private func reserveHeld(then next: Next) -> Bool {
        let batch = held
        held.removeAll(keepingCapacity: true)
        let reservation = CapGate.Ahead(gate, batch.filter { toSend($0.device) })
        let going = passReserved(then: next)
        ahead = (batch, reservation)
        return going
    }

    /// Passes on the batch reserved before, once its reservation is made; false: stop.
    private func passReserved(then next: Next) -> Bool {
        guard let (batch, reservation) = ahead else { return true }
        ahead = nil
        wait.release()
        switch reservation.wait() {
        case .failure(let error):
            failure = error
            return false
        case .success(let over):
            for d in batch where !next(d.device, d.key, over.contains(d.key)) { return false }
            // The capped lines the batch made are written (and their memory freed) each batch.
            wait.release()
            return true
        }
    }
}
