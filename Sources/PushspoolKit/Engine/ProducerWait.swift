import Foundation

/// The one way a send job's producer waits (for a free slot, a provider's quiet time, a rate
/// cap, its pacing, a frequency-cap reservation): it first releases its `Handout`, so nothing it
/// holds (an outbox line, a result line, the slot either keeps) waits with it, then sleeps until
/// the moment on the `StopBell`, which a stop, a cancel or a pause rings.
struct ProducerWait: Sendable {
    /// What the producer holds (nil: a caller that holds nothing).
    let handout: Handout?
    /// Whether to give up (asked again at each ring).
    let halted: @Sendable () -> Bool

    static let holdingNothing = ProducerWait(handout: nil, halted: { false })

    /// Before a wait of another kind (a semaphore, a reservation's answer).
    func release() { handout?.release() }

    /// Waits until `moment` (`Uptime` seconds, the monotonic clock the rate caps, the pacing and
    /// the quiet times name it on); false when halted first. A moment already past returns at
    /// once (asking `halted` once) and releases nothing.
    func until(_ moment: Double) -> Bool {
        if moment > Uptime.seconds { release() }
        return StopBell.shared.sleep(untilUptime: moment, halted: halted)
    }
}
