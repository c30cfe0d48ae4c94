/// Which of a spool outbox's keys may be sent now, which wait for a retry and until when, and
/// which are in flight: the pure part of `SpoolOutbox`, with no lock, thread or clock of its own
/// (the caller says what time it is).
///
/// A key is in one state at a time, so one key is never sent twice at once:
///
/// | state | `ready` | `finished` | `retry(at:)` | `take(now:)` |
/// |---|---|---|---|---|
/// | none | ready | — | — | — |
/// | ready | ready | — | — | in flight, while a slot is free, oldest first |
/// | waiting | ready (new work goes now) | — | — | ready once its time is reached |
/// | in flight | in flight, again afterwards | none, or ready if `ready` came meanwhile | waiting, or ready if `ready` came meanwhile | — |
///
/// A `finished` or `retry` for a key not in flight is ignored (nothing to account for).
struct OutboxSchedule<Key: Hashable> {
    enum State: Equatable {
        case ready
        case waiting(due: Double)
        /// `again`: made ready while in flight, so ready once more when it ends.
        case inFlight(again: Bool)
    }

    private(set) var states: [Key: State] = [:]
    /// Ready keys in the order they became ready (every entry is `.ready`: a key leaves `ready`
    /// only through `take`, which takes from the front).
    private var readyOrder: [Key] = []
    private var readyHead = 0
    /// Retries by due time; an entry whose key is no longer waiting for that time is stale and skipped.
    private var dues = BinaryHeap<(due: Double, key: Key)>(before: { $0.due < $1.due })
    let maxInFlight: Int
    private(set) var inFlight = 0

    init(maxInFlight: Int) {
        self.maxInFlight = max(1, maxInFlight)
    }

    var readyCount: Int { readyOrder.count - readyHead }

    /// Nothing in flight and nothing ready to send (retries may wait).
    var isIdle: Bool { inFlight == 0 && readyCount == 0 }

    func state(of key: Key) -> State? { states[key] }

    /// `key` has work: sent when a slot is free.
    mutating func ready(_ key: Key) {
        switch states[key] {
        case nil, .waiting:
            makeReady(key)
        case .ready, .inFlight(again: true):
            break
        case .inFlight(again: false):
            states[key] = .inFlight(again: true)
        }
    }

    /// `key`'s send ended and needs no retry.
    mutating func finished(_ key: Key) {
        guard case .inFlight(let again) = states[key] else { return }
        inFlight -= 1
        if again { makeReady(key) } else { states[key] = nil }
    }

    /// `key`'s send ended and is to be tried again at `due`.
    mutating func retry(_ key: Key, at due: Double) {
        guard case .inFlight(let again) = states[key] else { return }
        inFlight -= 1
        if again {
            makeReady(key)
        } else {
            states[key] = .waiting(due: due)
            dues.push((due, key))
        }
    }

    /// Makes the retries due by `now` ready, then takes ready keys (oldest first) while a slot
    /// is free: these are now in flight, and the caller sends them.
    mutating func take(now: Double) -> [Key] {
        while let top = dues.top, top.due <= now {
            _ = dues.pop()
            if states[top.key] == .waiting(due: top.due) { makeReady(top.key) }
        }
        var out: [Key] = []
        while inFlight < maxInFlight, readyHead < readyOrder.count {
            let key = readyOrder[readyHead]
            readyHead += 1
            states[key] = .inFlight(again: false)
            inFlight += 1
            out.append(key)
        }
        if readyHead > 4096, readyHead * 2 > readyOrder.count {
            readyOrder.removeFirst(readyHead)
            readyHead = 0
        }
        return out
    }

    /// When the earliest retry is due (stale entries are dropped on the way).
    mutating func nextDue() -> Double? {
        while let top = dues.top {
            if states[top.key] == .waiting(due: top.due) { return top.due }
            _ = dues.pop()
        }
        return nil
    }

    private mutating func makeReady(_ key: Key) {
        states[key] = .ready
        readyOrder.append(key)
    }
}
