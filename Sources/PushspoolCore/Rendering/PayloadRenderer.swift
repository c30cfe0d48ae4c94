import Foundation

/// Maps a platform-neutral `Message` to each platform's native notification, byte for byte
/// predictable (README "Dropping jobs": default payloads). Pure: the engine renders once per job and platform and
/// shares the result across every device of that platform.
public enum PayloadRenderer {
    /// Renders `message` in `platform`'s native format (called once per job and platform). Checks size limits.
    /// `now` stands in for a Live Activity's `timestamp` when the job gives none ("the moment
    /// of sending": the engine renders when the job starts sending).
    public static func render(_ message: Message, for platform: Platform, now: Date = Date()) throws(RenderError) -> RenderedNotification {
        switch platform {
        case .apns: return .apns(try renderAPNs(message, now: now))
        case .fcm: return .fcm(try renderFCM(message))
        case .wns: return .wns(try renderWNS(message))
        case .web: return .web(try renderWeb(message))
        case .hms: return .hms(try renderHMS(message))
        case .adm: return .adm(try renderADM(message))
        }
    }
}
