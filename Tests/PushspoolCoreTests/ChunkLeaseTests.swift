import PushspoolCore
import Testing

/// A chunk's lease: every state × every event, against a table of rules read top to bottom
/// (first match wins). The rules are the README's "Several hosts" written as a table: a live
/// lease is its holder's alone, a lapsed one anyone's to take over, and its holder's no more.
@Suite struct ChunkLeaseTests {
    typealias L = ChunkLease<String>
    /// `a` is the holder that acts (renew, record, complete, release); `b` another host's claim;
    /// `c` the holder a claim makes.
    static let a = "a/1#1", b = "b/2#1", c = "c/3#2"

    enum State: CaseIterable { case open, heldByA, heldByB, lapsedA, lapsedB, done }
    enum Event: CaseIterable { case claim, renew, record, complete, release, expire, end }

    static func lease(_ s: State) -> L {
        switch s {
        case .open: .open
        case .heldByA: .held(a)
        case .heldByB: .held(b)
        case .lapsedA: .lapsed(a)
        case .lapsedB: .lapsed(b)
        case .done: .done
        }
    }

    static func event(_ e: Event) -> L.Event {
        switch e {
        case .claim: .claim(as: c)
        case .renew: .renew(by: a)
        case .record: .record(by: a)
        case .complete: .complete(by: a)
        case .release: .release(by: a)
        case .expire: .expire
        case .end: .end
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var state: State, event: Event
        var testDescription: String { "\(state) + \(event)" }
    }

    static let cases = State.allCases.flatMap { s in Event.allCases.map { Case(state: s, event: $0) } }

    struct Rule: Sendable {
        var states: Set<State>? = nil, events: Set<Event>? = nil
        /// nil: the state does not change.
        var next: L?
        var effect: L.Effect
        func matches(_ c: Case) -> Bool { (states?.contains(c.state) ?? true) && (events?.contains(c.event) ?? true) }
    }

    static let acts: Set<Event> = [.renew, .record, .complete, .release]

    static let rules: [Rule] = [
        // Done is done: whatever comes after changes nothing.
        Rule(states: [.done], next: nil, effect: .refused(.done)),
        // The origin ending the job ends every chunk of it, held or not.
        Rule(events: [.end], next: .done, effect: .ended),
        // An open chunk is claimed; a lapsed one taken over, naming whose it was; a live lease is not claimable.
        Rule(states: [.open], events: [.claim], next: .held(c), effect: .claimed),
        Rule(states: [.lapsedA], events: [.claim], next: .held(c), effect: .tookOver(from: a)),
        Rule(states: [.lapsedB], events: [.claim], next: .held(c), effect: .tookOver(from: b)),
        Rule(states: [.heldByA, .heldByB], events: [.claim], next: nil, effect: .refused(.heldElsewhere)),
        // Time passing ends a live lease only.
        Rule(states: [.heldByA], events: [.expire], next: .lapsed(a), effect: .expired),
        Rule(states: [.heldByB], events: [.expire], next: .lapsed(b), effect: .expired),
        Rule(events: [.expire], next: nil, effect: .refused(.notHolder)),
        // The live holder's own acts.
        Rule(states: [.heldByA], events: [.renew], next: nil, effect: .renewed),
        Rule(states: [.heldByA], events: [.record], next: nil, effect: .recorded),
        Rule(states: [.heldByA], events: [.complete], next: .done, effect: .completed),
        Rule(states: [.heldByA], events: [.release], next: .open, effect: .released),
        // A lapsed holder can do nothing more: its batch would land after a take-over's read.
        Rule(states: [.lapsedA], events: acts, next: nil, effect: .refused(.lapsed)),
        // Nor can anyone who is not the live holder.
        Rule(states: [.open, .heldByB, .lapsedB], events: acts, next: nil, effect: .refused(.notHolder)),
    ]

    @Test(arguments: cases) func everyCombination(_ c: Case) throws {
        let rule = try #require(Self.rules.first { $0.matches(c) }, "no rule covers this combination")
        let (next, effect) = Self.lease(c.state).on(Self.event(c.event))
        #expect(effect == rule.effect)
        #expect(next == (rule.next ?? Self.lease(c.state)))
    }

    @Test func noRuleIsDead() {
        for index in Self.rules.indices {
            #expect(Self.cases.contains { c in Self.rules.firstIndex { $0.matches(c) } == index }, "rule \(index) is never reached")
        }
    }

    @Test func tableSize() {
        #expect(Self.cases.count == 6 * 7)
    }

    /// The stale holder, step by step: `a` stalls past its lease, `b` takes the chunk over, and
    /// `a`'s late batch is refused while `b`'s goes in; a second claim of the same host is a new
    /// holder, so the old claim's run is locked out too.
    @Test func aStaleHolderIsLockedOutOfATakenOverChunk() {
        var lease = L.open
        func apply(_ e: L.Event) -> L.Effect {
            let (next, effect) = lease.on(e)
            lease = next
            return effect
        }
        #expect(apply(.claim(as: "a#1")) == .claimed)
        #expect(apply(.record(by: "a#1")) == .recorded)
        #expect(apply(.expire) == .expired)
        #expect(apply(.record(by: "a#1")) == .refused(.lapsed))
        #expect(apply(.claim(as: "b#2")) == .tookOver(from: "a#1"))
        #expect(apply(.record(by: "a#1")) == .refused(.notHolder))
        #expect(apply(.renew(by: "a#1")) == .refused(.notHolder))
        #expect(apply(.record(by: "b#2")) == .recorded)
        #expect(apply(.expire) == .expired)
        #expect(apply(.claim(as: "b#3")) == .tookOver(from: "b#2"))
        #expect(apply(.complete(by: "b#2")) == .refused(.notHolder))
        #expect(apply(.complete(by: "b#3")) == .completed)
        #expect(lease == .done)
    }

    @Test(arguments: [(false, nil, false, L.open), (false, nil, true, L.open), (false, "a", true, L.held("a")),
                      (false, "a", false, L.lapsed("a")), (true, "a", true, L.done), (true, nil, false, L.done)] as [(Bool, String?, Bool, L)])
    func theStateARowSays(done: Bool, holder: String?, leaseRuns: Bool, expected: L) {
        #expect(L(done: done, holder: holder, leaseRuns: leaseRuns) == expected)
    }
}
