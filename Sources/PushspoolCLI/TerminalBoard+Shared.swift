import Foundation
import PushspoolKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The process's one progress board belongs to the command line, which owns stderr; the library
// takes it as a parameter (`Engine.Hooks.board`, `StreamLogHandler(board:)`).
extension TerminalBoard {
    /// Stderr's live progress lines, drawn only when stderr is a terminal.
    static let shared = TerminalBoard(enabled: isatty(STDERR_FILENO) == 1)
}
