/// How a host schedules its chunks of the shared queue (`ChunkWorker`), decided without I/O:
/// how many chunks a look at the queue claims, and when the next look is due that no event
/// announces.
///
/// A chunk in progress holds one of `max_chunks` slots until its run ends (a chunk lost to
/// another host too: its run still stops). One chunk at a time reads its devices: the next is
/// claimed once it has read its last page, so its last devices go out while the next is claimed
/// and read and the worker pool's slots never drain between chunks. One reader keeps every slot
/// of the pool busy; more would only contend for them and hold work other hosts could take.
public struct ChunkSlots: Sendable, Equatable {
    /// `queue.max_chunks`.
    public var max: Int
    /// Chunks in progress (claimed, their run not ended).
    public var held: Int
    /// Whether one of them, not lost, still reads its devices.
    public var reading: Bool

    public init(max: Int, held: Int, reading: Bool) {
        self.max = max
        self.held = held
        self.reading = reading
    }

    /// How many chunks to claim now: one when a slot is free and no chunk reads, else none (the
    /// next look comes with a chunk's last page or its end).
    public var room: Int { reading ? 0 : Swift.max(0, Swift.min(1, max - held)) }

    /// Seconds until the next look that nothing will announce, nil: none (the host sleeps until
    /// a notification or a chunk's event). `lapse`: until the earliest lease another host holds
    /// runs out, looked at just after it (a claim takes only a lease strictly past its end);
    /// `skipEnds`: until a job this host skipped may be tried again.
    public static func nextLook(lapse: Double?, skipEnds: Double?) -> Double? {
        let times = [lapse.map { $0 + afterLapse }, skipEnds].compactMap { $0 }
        return times.min().map { Swift.max(0, $0) }
    }

    /// How long after a lease's end its chunk is looked at.
    public static let afterLapse = 0.1
}
