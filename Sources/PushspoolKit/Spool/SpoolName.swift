import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A name in a spool folder as the file system stores it: bytes, which need not be UTF-8.
///
/// Foundation lists a folder as `String`s and cannot show, or reach, a name that is not valid
/// UTF-8, so the spool lists its folders with `readdir` and looks at the bytes. A name is *safe*
/// when it is valid UTF-8 without control characters; only safe names are ever run. A job file
/// with any other name (a newline, an ESC sequence, a lone 0xFF byte) would break every log line
/// and terminal that shows it: it is quarantined unread under `safeName` instead.
struct SpoolName: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The name as text when it is safe: valid UTF-8 without control characters (C0, DEL, C1),
    /// line separators or bidi controls (a name must not display as another).
    var text: String? {
        guard let text = String(validating: bytes, as: UTF8.self),
              !text.unicodeScalars.contains(where: Self.isControl) else { return nil }
        return text
    }

    /// What is wrong with the name (nil when it is safe), to follow "the file name …".
    var problem: String? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return "is not valid UTF-8" }
        return text.unicodeScalars.contains(where: Self.isControl) ? "contains control characters" : nil
    }

    /// Whether the name would be a job if it were safe: `*.json`, not starting with a dot.
    var looksLikeJob: Bool {
        bytes.count > 5 && bytes.first != UInt8(ascii: ".") && bytes.suffix(5).elementsEqual(".json".utf8)
    }

    /// The name on one printable line: printable characters as they are, `\n`, `\r`, `\t`, and
    /// `\xNN` for every other control character's bytes and every byte that is not UTF-8;
    /// backslashes and double quotes escaped, so the original bytes can be read back.
    var escaped: String {
        var out = ""
        var i = 0
        while i < bytes.count {
            let length = Self.sequenceLength(at: i, in: bytes)
            guard let decoded = String(validating: bytes[i..<(i + length)], as: UTF8.self),
                  let scalar = decoded.unicodeScalars.first else {
                out += Self.hex(bytes[i])     // not UTF-8: this byte alone, then go on
                i += 1
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case _ where Self.isControl(scalar): out += bytes[i..<(i + length)].map(Self.hex).joined()
            default: out.unicodeScalars.append(scalar)
            }
            i += length
        }
        return out
    }

    /// A deterministic, ASCII, practically unique name for the quarantined file: the name's
    /// letters, digits and `._-` (anything else as `_`, at most 64), `-`, 8 hex digits of a
    /// hash of all its bytes, `.json`. `bad\xff.json` → `bad_-1b2c3d4e.json`.
    var safeName: String {
        let stem = looksLikeJob ? bytes.dropLast(5) : bytes[...]
        let printable = stem.prefix(64).map { byte -> Character in
            let c = Character(Unicode.Scalar(byte))
            return byte < 0x80 && (c.isLetter || c.isNumber || "._-".contains(c)) ? c : "_"
        }
        let hash = String(Self.fnv1a(bytes) & 0xffff_ffff, radix: 16)
        return String(printable) + "-" + String(repeating: "0", count: 8 - hash.count) + hash + ".json"
    }

    /// The path of this name in `directory`, as bytes for the C calls (NUL-terminated).
    func path(in directory: String) -> [CChar] {
        (Array(directory.utf8) + [UInt8(ascii: "/")] + bytes + [0]).map { CChar(bitPattern: $0) }
    }

    /// The names in `directory` (without `.` and `..`), nil when it cannot be read.
    static func list(_ directory: String) -> [SpoolName]? {
        guard let dir = opendir(directory) else { return nil }
        defer { closedir(dir) }
        var names: [SpoolName] = []
        while let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: &entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            names.append(SpoolName(bytes))
        }
        return names
    }

    /// 64-bit FNV-1a: small, stable across versions and platforms (names derived from it must
    /// not change between runs).
    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// What no terminal or log line may show raw (`TerminalText`): controls, line separators, bidi controls.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool { TerminalText.mustEscape(scalar) }

    private static func hex(_ byte: UInt8) -> String {
        "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
    }

    /// How many bytes the UTF-8 sequence at `i` claims to have (1 for a stray byte).
    private static func sequenceLength(at i: Int, in bytes: [UInt8]) -> Int {
        let lead = bytes[i]
        let length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
        return min(length, bytes.count - i)
    }
}
