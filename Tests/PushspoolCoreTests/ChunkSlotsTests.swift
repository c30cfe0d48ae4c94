import PushspoolCore
import Testing

/// A host's chunk slots (`ChunkSlots`): what a look at the queue claims, and when the next look
/// no event announces is due.
@Suite struct ChunkSlotsTests {
    struct Room: Sendable, CustomTestStringConvertible {
        var max: Int, held: Int, reading: Bool, room: Int
        var testDescription: String { "max \(max), held \(held)\(reading ? ", one reading" : ""): \(room)" }
    }

    @Test(arguments: [
        Room(max: 4, held: 0, reading: false, room: 1),   // idle: one chunk, never four at once
        Room(max: 4, held: 1, reading: true, room: 0),    // the one claimed still reads
        Room(max: 4, held: 1, reading: false, room: 1),   // it read its last page: the next
        Room(max: 4, held: 3, reading: false, room: 1),
        Room(max: 4, held: 4, reading: false, room: 0),   // every slot taken: a chunk's end frees one
        Room(max: 4, held: 4, reading: true, room: 0),
        Room(max: 4, held: 5, reading: false, room: 0),   // more than max (a lost chunk's run ending): none
        Room(max: 1, held: 0, reading: false, room: 1),
        Room(max: 1, held: 1, reading: false, room: 0),
    ])
    func aLookClaimsOneChunkWhenASlotIsFreeAndNoneReads(_ c: Room) {
        #expect(ChunkSlots(max: c.max, held: c.held, reading: c.reading).room == c.room)
    }

    struct Look: Sendable, CustomTestStringConvertible {
        var lapse: Double?, skipEnds: Double?, next: Double?
        var testDescription: String { "lapse \(lapse.map { "\($0)" } ?? "-"), skip \(skipEnds.map { "\($0)" } ?? "-")" }
    }

    @Test(arguments: [
        Look(lapse: nil, skipEnds: nil, next: nil),      // idle: no timer at all
        Look(lapse: 2, skipEnds: nil, next: 2.1),        // just after the lease's end
        Look(lapse: 0, skipEnds: nil, next: 0.1),
        Look(lapse: nil, skipEnds: 30, next: 30),
        Look(lapse: 2, skipEnds: 30, next: 2.1),         // the earlier of the two
        Look(lapse: 40, skipEnds: 30, next: 30),
        Look(lapse: nil, skipEnds: -1, next: 0),         // already due: now
    ])
    func theNextLookIsTheEarliestDueTime(_ c: Look) {
        #expect(ChunkSlots.nextLook(lapse: c.lapse, skipEnds: c.skipEnds) == c.next)
    }
}
