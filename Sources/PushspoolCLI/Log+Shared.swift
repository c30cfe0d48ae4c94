import Foundation
import PushspoolKit

// The process's one logger belongs to the command line; the library takes a `Log` as a
// parameter (`Engine.Hooks.log`).
extension Log {
    /// The process's logger: text on stderr (above the progress lines), `info` and up (`debug`
    /// with PUSHSPOOL_DEBUG set), until `--log-format` / `--log-level` reconfigure it.
    static let shared = Log(minimum: ProcessInfo.processInfo.environment["PUSHSPOOL_DEBUG"] != nil ? .debug : .info,
                            handler: StreamLogHandler(format: .text, board: .shared))
}
