/// Comparisons whose duration does not depend on where two secrets first differ, so that a
/// client timing its failures learns nothing about a stored hash, digest or MAC.
public enum ConstantTime {
    /// Whether `a` and `b` are equal; the lengths are public (every hash of a kind has the same).
    public static func equal<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }

    /// All ones when `a` and `b` (equal lengths) are equal, else zero, computed without a branch
    /// on the data: lets a caller select among entries without an early exit.
    public static func equalMask(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Int {
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        // 0 → 0 - 1 = all ones; 1…255 → (d - 1) >> 8 has the top bits clear → 0 after the shift.
        return Int(bitPattern: UInt((UInt32(difference) &- 1) >> 8 & 1) &* UInt.max)
    }
}
