import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Creates `directory/<name bytes>` through open(2) on a byte path: a Swift `String` cannot
/// hold a name that is not UTF-8.
func createFile(rawName name: [UInt8], in directory: String, contents: String) {
    let path = (Array(directory.utf8) + [UInt8(ascii: "/")] + name + [0]).map { CChar(bitPattern: $0) }
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o640)
    guard fd >= 0 else {
        Issue.record("cannot create \(SpoolName(name).escaped) in \(directory): \(String(cString: strerror(errno)))")
        return
    }
    _ = Array(contents.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// The names in `directory` as bytes (readdir), without `.` and `..`: what is really there.
func rawNames(in directory: String) -> [[UInt8]] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [[UInt8]] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: &entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
        if name != Array(".".utf8) && name != Array("..".utf8) { names.append(name) }
    }
    return names.sorted { $0.lexicographicallyPrecedes($1) }
}

@Suite struct SpoolNameTests {
    @Test("names that are not UTF-8 or hold control characters are unsafe, and say why")
    func safety() {
        #expect(SpoolName(Array("welcome-42.json".utf8)).text == "welcome-42.json")
        #expect(SpoolName(Array("café ☕.json".utf8)).text == "café ☕.json")
        #expect(SpoolName(Array("bad".utf8) + [0xFF] + Array(".json".utf8)).problem == "is not valid UTF-8")
        #expect(SpoolName(Array("a\nb.json".utf8)).problem == "contains control characters")
        #expect(SpoolName(Array("\u{1b}[31m.json".utf8)).text == nil)
        #expect(SpoolName(Array("del\u{7f}.json".utf8)).text == nil)
        #expect(SpoolName(Array("c1\u{9b}.json".utf8)).text == nil, "C1 controls too (CSI)")
        #expect(SpoolName(Array("invoice\u{202E}nosj.exe.json".utf8)).text == nil, "a bidi override makes a name display as another")
        #expect(SpoolName(Array("a\u{2028}b.json".utf8)).text == nil, "a line separator")
        #expect(SpoolName(Array("invoice\u{202E}x.json".utf8)).escaped == #"invoice\xe2\x80\xaex.json"#)
        #expect(SpoolName(Array("ok.json".utf8)).problem == nil)
    }

    @Test("the escaped name is one printable line that shows every original byte")
    func escaping() {
        #expect(SpoolName(Array("bad".utf8) + [0xFF] + Array(".json".utf8)).escaped == #"bad\xff.json"#)
        #expect(SpoolName(Array("a\nb\tc\r.json".utf8)).escaped == #"a\nb\tc\r.json"#)
        #expect(SpoolName(Array("\u{1b}[31m\u{7f}.json".utf8)).escaped == #"\x1b[31m\x7f.json"#)
        #expect(SpoolName(Array("c1\u{9b}é.json".utf8)).escaped == #"c1\xc2\x9bé.json"#)
        #expect(SpoolName(Array(#"q"\.json"#.utf8)).escaped == #"q\"\\.json"#)
        // A truncated sequence: its bytes one by one, then the rest as usual.
        #expect(SpoolName([0xE2, 0x82, 0x41]).escaped == #"\xe2\x82A"#)
    }

    @Test("the safe name is ASCII, deterministic and tells names apart")
    func safeName() {
        let bad = SpoolName(Array("bad".utf8) + [0xFF] + Array(".json".utf8))
        #expect(bad.safeName == SpoolName(bad.bytes).safeName)
        #expect(bad.safeName.hasPrefix("bad_-") && bad.safeName.hasSuffix(".json"))
        #expect(bad.safeName.utf8.count == "bad_-".count + 8 + ".json".count)
        let other = SpoolName(Array("bad".utf8) + [0xFE] + Array(".json".utf8))
        #expect(other.safeName != bad.safeName, "same printable part, other bytes")
        let long = SpoolName(Array(String(repeating: "x", count: 250).utf8) + [0x0A] + Array(".json".utf8))
        #expect(long.safeName.count <= 64 + 1 + 8 + 5)
        for name in [bad, other, long, SpoolName(Array("\u{1b}é.json".utf8))] {
            #expect(name.safeName.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }, "\(name.safeName)")
            #expect(SpoolName(Array(name.safeName.utf8)).text != nil)
        }
    }

    @Test("the spool lists raw names: unsafe job names apart, never as jobs")
    func listing() throws {
        let dir = TempDir()
        let spool = try Spool(root: dir.url.appendingPathComponent("s"))
        let incoming = spool.url(.incoming).path
        createFile(rawName: Array("ok.json".utf8), in: incoming, contents: "{}")
        createFile(rawName: Array("bad".utf8) + [0xFF] + Array(".json".utf8), in: incoming, contents: "{}")
        createFile(rawName: Array("nl\n.json".utf8), in: incoming, contents: "{}")
        createFile(rawName: Array(".hidden".utf8) + [0xFF] + Array(".json".utf8), in: incoming, contents: "{}")
        createFile(rawName: Array("notes".utf8) + [0xFF], in: incoming, contents: "")
        #expect(spool.jobs(in: .incoming) == ["ok.json"])
        let unsafe = spool.unsafeJobNames(in: .incoming).map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) }
        #expect(unsafe == [Array("bad".utf8) + [0xFF] + Array(".json".utf8), Array("nl\n.json".utf8)])

        let raw = SpoolName(Array("bad".utf8) + [0xFF] + Array(".json".utf8))
        let moved = try #require(spool.quarantine(raw, from: .incoming))
        #expect(moved == raw.safeName)
        #expect(rawNames(in: spool.url(.failed).path) == [Array(moved.utf8)])
        #expect(spool.quarantine(raw, from: .incoming) == nil, "gone: another dispatcher moved it")
    }
}
