import Foundation

/// A read position in one JSON Lines line, for the import's fast path (`RegistrationLine.pack`).
///
/// A value type with its own position: the fast path's scanner used to be local functions
/// capturing a `var` index, which Swift boxes and checks for exclusive access at run time on
/// every call (about 130 instructions a string, a fifth of a 100k-device import's Swift work).
struct JSONLineCursor {
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    var atEnd: Bool { position >= bytes.count }

    /// The byte at the position is `byte` (false at the end).
    func at(_ byte: UInt8) -> Bool { position < bytes.count && bytes[position] == byte }

    /// Moves past `byte` if it is next; tells whether it was.
    mutating func take(_ byte: UInt8) -> Bool {
        guard at(byte) else { return false }
        position += 1
        return true
    }

    mutating func skipSpace() {
        while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x09 || bytes[position] == 0x0D { position += 1 }
    }

    /// A string of printable ASCII with no escape (0x7F passes here, validation refuses it):
    /// the range of its contents, the position moved past its closing quote; nil (position kept
    /// unspecified) for anything else.
    mutating func string() -> Range<Int>? {
        guard at(UInt8(ascii: "\"")) else { return nil }
        let start = position + 1
        var j = start
        while j < bytes.count, bytes[j] != UInt8(ascii: "\"") {
            let c = bytes[j]
            guard c >= 0x20, c < 0x80, c != UInt8(ascii: "\\") else { return nil }
            j += 1
        }
        guard j < bytes.count else { return nil }
        position = j + 1
        return start..<j
    }

    /// The bytes of `range` are `s`.
    func equals(_ range: Range<Int>, _ s: StaticString) -> Bool {
        range.count == s.utf8CodeUnitCount && memcmp(bytes.baseAddress! + range.lowerBound, s.utf8Start, range.count) == 0
    }
}
