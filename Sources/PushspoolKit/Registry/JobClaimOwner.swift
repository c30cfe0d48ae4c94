import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The owner recorded with a job id claimed in a shared registry: this host's name and the
/// spool's path. The same host resuming the job (after a crash, a restart, a lost database
/// connection) is the same owner; a copy of the job on another host's spool is not.
enum JobClaimOwner {
    static func current(spool: Spool) -> String {
        "\(hostName) \(spool.root.standardizedFileURL.path)"
    }

    static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown-host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }()
}
