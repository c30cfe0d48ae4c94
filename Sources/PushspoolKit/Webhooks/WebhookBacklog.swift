import Foundation
import Synchronization

/// The journal files in `webhooks/pending/` whose entries are not in memory: events made while
/// the delivery's window was full (a receiver down for hours) and the files an earlier run left.
/// They stay on disk and are read in the order written, a few entries at a time, as the window
/// makes room: a million pending events cost their files, not a million entries in memory.
///
/// `add` may be called from any thread; `read` only from the delivery's thread (the open file
/// is that thread's).
final class WebhookBacklog: @unchecked Sendable {   // `unread` is locked; `open` is the delivery thread's
    private let directory: URL
    private let unread = Mutex<[String]>([])
    private var open: (file: String, reader: LineReader)?

    init(directory: URL) { self.directory = directory }

    /// A file whose entries are to be read later, after every file added before it.
    func add(_ file: String) { unread.withLock { $0.append(file) } }

    /// What `read` took: entries with the file they are in, and the files read to their end.
    struct Taken {
        var entries: [(file: String, line: [UInt8])] = []
        var ended: [String] = []
    }

    /// Reads lines until `entries` lines or `bytes` bytes were taken (at least one line when
    /// there is one), oldest file first. A file that cannot be read counts as read to its end
    /// (it stays in `pending/` for the next run, which tries again).
    func read(entries: Int, bytes: Int) -> Taken {
        var taken = Taken()
        var size = 0
        while taken.entries.count < entries, size < bytes || taken.entries.isEmpty {
            if open == nil {
                guard let file = unread.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { break }
                guard let reader = try? LineReader(url: directory.appendingPathComponent(file)) else {
                    taken.ended.append(file)
                    continue
                }
                open = (file, reader)
            }
            guard let (file, reader) = open else { break }
            let line = (try? reader.next()) ?? nil
            guard let (_, bytes) = line else {
                reader.close()
                open = nil
                taken.ended.append(file)
                continue
            }
            if bytes.isEmpty { continue }
            size += bytes.count
            taken.entries.append((file, bytes))
        }
        return taken
    }
}
