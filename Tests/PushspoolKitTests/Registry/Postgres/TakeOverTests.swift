import Testing
@testable import PushspoolKit

/// Whether a claim took a chunk over, decided from what the row was before it (`TakeOver`).
struct TakeOverTests {
    @Test(arguments: [
        // (host before, its claim's number, the claim's holder, taken over from)
        (nil, 0, "b/2#1", nil),                // never claimed: a claim, not a take-over
        (nil, 3, "b/2#4", nil),                // let go by its holder: open again
        ("a/1", 1, "b/2#2", "a/1#1"),          // a's lease ran out: taken over from a's claim
        ("b/2", 1, "b/2#2", "b/2#1"),          // the same host's older claim is another holder
    ] as [(String?, Int, String, String?)])
    func aClaimTakesOverOnlyALapsedHolder(_ host: String?, _ taken: Int, _ holder: String, _ from: String?) {
        #expect(TakeOver.previousHolder(host: host, taken: taken, claimedBy: holder) == from)
    }
}
