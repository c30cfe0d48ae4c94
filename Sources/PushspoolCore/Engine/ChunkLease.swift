/// A chunk's lease in the shared queue (README "Several hosts"), decided without I/O: who may do
/// what with a chunk, and what each act makes of it. The database holds the state (a
/// `queue_chunks` row: `done`, `host` and `taken` naming the holder, `lease_until` on the
/// database's clock); each statement of `PostgresJobQueue` that acts on a chunk is one `Event`,
/// whose `WHERE` is this type's precondition, checked under the row's lock in the statement that
/// acts. The tests hold `on` to every combination of state and event.
///
/// A holder is one claim of the chunk (its host and the claim's number, `taken`), not a host: a
/// host that lost a chunk and claimed it again is a new holder, and the run of its old claim
/// can do nothing more with it.
///
/// Why a lapsed lease can do nothing: another host may take the chunk over at any moment after
/// `lease_until` and read back what was recorded so far to know which targets are final. A
/// batch recorded by the lapsed holder after that read would log and count its targets a second
/// time (the new holder sends them too). So only a live lease records, renews, completes or
/// lets go; the lapsed holder's lines are dropped and its run stops, and the new holder (or the
/// next claim, when no one took it over) sends those targets, as after a crash.
public enum ChunkLease<Holder: Equatable & Sendable>: Sendable, Equatable {
    /// No holder: never claimed, or let go. Any host may claim it.
    case open
    /// `Holder`'s lease runs: it alone may renew, record, complete or let go.
    case held(Holder)
    /// `Holder`'s lease ran out unrenewed: any host may take the chunk over; the holder can do
    /// nothing more with it.
    case lapsed(Holder)
    /// Every target has its outcome recorded (or the job ended): nothing changes it again.
    case done

    /// The state a row and the database's clock say.
    public init(done: Bool, holder: Holder?, leaseRuns: Bool) {
        switch (done, holder) {
        case (true, _): self = .done
        case (false, nil): self = .open
        case (false, let holder?): self = leaseRuns ? .held(holder) : .lapsed(holder)
        }
    }

    public enum Event: Sendable, Equatable {
        /// A host's claim; `as` is the holder it becomes (the claim's number counts every claim).
        case claim(as: Holder)
        /// The holder's acts while it sends the chunk.
        case renew(by: Holder), record(by: Holder), complete(by: Holder), release(by: Holder)
        /// The lease's time passed without a renewal.
        case expire
        /// The job's origin ended the job: every chunk of it is done.
        case end
    }

    public enum Refusal: Sendable, Equatable {
        /// Another holder's lease runs: not claimable now.
        case heldElsewhere
        /// The act is not this holder's: another holds (or held) the chunk, or no one does.
        case notHolder
        /// This holder's own lease ran out: it can do nothing more with the chunk.
        case lapsed
        case done
    }

    public enum Effect: Sendable, Equatable {
        /// An open chunk claimed.
        case claimed
        /// A lapsed holder's chunk taken over: what it recorded is final, the rest is sent again.
        case tookOver(from: Holder)
        case renewed, recorded, completed, released, expired, ended
        /// Nothing changes.
        case refused(Refusal)
    }

    /// What `event` does to a chunk in this state: the state after it and its effect.
    public func on(_ event: Event) -> (next: ChunkLease, effect: Effect) {
        switch (self, event) {
        case (.done, _):
            return (.done, .refused(.done))
        case (_, .end):
            return (.done, .ended)
        case (.open, .claim(let holder)):
            return (.held(holder), .claimed)
        case (.lapsed(let previous), .claim(let holder)):
            return (.held(holder), .tookOver(from: previous))
        case (.held, .claim):
            return (self, .refused(.heldElsewhere))
        case (.held(let holder), .expire):
            return (.lapsed(holder), .expired)
        case (.held(let holder), .renew(let by)) where by == holder:
            return (self, .renewed)
        case (.held(let holder), .record(let by)) where by == holder:
            return (self, .recorded)
        case (.held(let holder), .complete(let by)) where by == holder:
            return (.done, .completed)
        case (.held(let holder), .release(let by)) where by == holder:
            return (.open, .released)
        case (.lapsed(let holder), _) where event.actor == holder:
            return (self, .refused(.lapsed))
        default:
            // An act by a holder that is not the live one (another's, or a chunk no one holds).
            return (self, .refused(.notHolder))
        }
    }
}

extension ChunkLease.Event {
    /// Who acts, for a holder's own acts.
    var actor: Holder? {
        switch self {
        case .renew(let holder), .record(let holder), .complete(let holder), .release(let holder): holder
        case .claim, .expire, .end: nil
        }
    }
}
