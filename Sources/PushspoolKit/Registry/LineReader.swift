import Foundation

/// Reads a file line by line in 64 KiB chunks, so importing a million registrations does not
/// hold the whole file in memory. Lines are numbered from 1; a trailing `\r` is dropped.
final class LineReader: @unchecked Sendable {   // used by one thread at a time
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var eof = false
    private var number = 0

    init(url: URL) throws {
        handle = try FileHandle(forReadingFrom: url)
    }

    func close() { try? handle.close() }

    func next() throws -> (Int, [UInt8])? {
        while true {
            if let nl = buffer[start...].firstIndex(of: 0x0A) {
                var line = Array(buffer[start..<nl])
                start = nl + 1
                if line.last == 0x0D { line.removeLast() }
                number += 1
                return (number, line)
            }
            if eof {
                guard start < buffer.count else { return nil }
                var line = Array(buffer[start...])
                start = buffer.count
                if line.last == 0x0D { line.removeLast() }
                number += 1
                return (number, line)
            }
            buffer.removeFirst(start)
            start = 0
            let chunk = try handle.read(upToCount: 1 << 16) ?? Data()
            if chunk.isEmpty { eof = true } else { buffer += chunk }
        }
    }
}
