import PushspoolCore

/// sysexits(3) codes (README "Command line").
public enum ExitCode: Int32, Sendable, CaseIterable {
    case ok = 0
    case usage = 64
    case dataError = 65
    case software = 70
    case ioError = 74
    /// EX_NOPERM: a spool this user may not read or write.
    case noPermission = 77
    case config = 78
}

extension ExitCode {
    /// What the code means, as `pushspool --help` and the Command line reference say it.
    public var meaning: String {
        switch self {
        case .ok: "ok"
        case .usage: "usage"
        case .dataError: "bad job data"
        case .software: "internal error"
        case .ioError: "I/O error"
        case .noPermission: "permission denied"
        case .config: "configuration error"
        }
    }
}
