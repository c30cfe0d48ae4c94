import PushspoolCore

/// sysexits(3) codes (README "Command line").
public enum ExitCode: Int32, Sendable {
    case ok = 0
    case usage = 64
    case dataError = 65
    case software = 70
    case ioError = 74
    /// EX_NOPERM: a spool this user may not read or write.
    case noPermission = 77
    case config = 78
}
