import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This host's name, as a PostgreSQL job claim (`JobClaimOwner`) and the metrics file's default
/// `instance` label name it: `PUSHSPOOL_HOSTNAME` when set (operators of cloned machines that
/// share one name; tests that run two "hosts" on one machine), else `gethostname`.
package enum HostName {
    package static let current: String = {
        if let name = ProcessInfo.processInfo.environment["PUSHSPOOL_HOSTNAME"], !name.isEmpty { return name }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown-host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }()
}
