import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Live status lines at the bottom of a terminal (stderr): redrawn in place, cleared before any
/// other output (log lines, job reports) so nothing interleaves, and never drawn when stderr is
/// not a terminal. Lines are cut to the terminal's width so each takes exactly one row.
public final class TerminalBoard: Sendable {
    private struct State { var drawn = 0 }
    private let state = Mutex(State())
    public let enabled: Bool

    /// `enabled`: stderr is a terminal (the process decides: one board per process, passed to
    /// whatever draws or logs on stderr).
    public init(enabled: Bool) { self.enabled = enabled }

    /// Replaces the lines on screen with `lines`.
    public func draw(_ lines: [String]) {
        guard enabled else { return }
        let width = max(20, Self.columns() - 1)
        let text = lines.map { String($0.prefix(width)) }.joined(separator: "\n")
        state.withLock { s in
            // (At least the current row is cleared: the cursor is at its start after other output.)
            Self.write(Self.erase(max(1, s.drawn)) + text)
            s.drawn = lines.count
        }
    }

    /// Clears the lines, runs `output` (which writes whole lines), and leaves the lines for the
    /// next `draw`.
    public func above(_ output: () -> Void) {
        guard enabled else { return output() }
        state.withLock { s in
            if s.drawn > 0 { Self.write(Self.erase(s.drawn)) }
            s.drawn = 0
            output()
        }
    }

    public func clear() { draw([]) }

    /// From the end of the last drawn line: clear it and the rows above it.
    static func erase(_ rows: Int) -> String {
        guard rows > 0 else { return "" }
        return "\r\u{1B}[K" + String(repeating: "\u{1B}[1A\u{1B}[K", count: rows - 1)
    }

    private static func write(_ s: String) {
        FileHandle.standardError.write(Data(s.utf8))
    }

    static func columns() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }
}
