import Foundation

/// `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date. One parser for every provider.
public enum RetryAfter {
    /// Seconds to wait, or nil when the header is absent, negative or unparsable.
    public static func seconds(_ value: String?, now: Date = Date()) -> Double? {
        guard let v = value?.trimmingCharacters(in: .whitespaces), !v.isEmpty else { return nil }
        if let s = Double(v) { return s >= 0 && s.isFinite ? s : nil }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = f.date(from: v) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
