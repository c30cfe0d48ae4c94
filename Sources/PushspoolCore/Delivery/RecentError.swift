import Foundation

/// One answer of a provider that was not a delivery, as `status` and the dashboard's System page
/// show it: when (the latest of a run of identical ones), the code, the provider's own word for
/// the reason, what it means (`FailureGuide`), and how many came in a row.
///
/// Never the reason's text beyond that word: a provider's reason may quote a URL that holds a
/// device's handle (a Web Push endpoint) or echo a token, and what is kept here is written to the
/// spool's `.state/` and shown to operators.
public struct RecentError: Sendable, Equatable {
    /// Seconds since the epoch of the latest answer of the run.
    public var at: Double
    /// The HTTP status or a local code (`transport`, `no-answer`), at most 16 characters.
    public var code: String
    /// The provider's word (`BadDeviceToken`, `UNREGISTERED`), nil when the reason has none.
    public var reason: String?
    /// One sentence from `FailureGuide`.
    public var meaning: String
    /// Answers with this code and reason in a row.
    public var count: Int

    public init(at: Double, code: String, reason: String?, meaning: String, count: Int = 1) {
        self.at = at
        self.code = code
        self.reason = reason
        self.meaning = meaning
        self.count = count
    }

    /// The entry for a provider's answer to a request for `platform`, at `at`.
    public init(_ result: ProviderResult, platform: Platform?, at: Double) {
        let code = Self.safeCode(result.code)
        // The whole reason finds the entry (it is not kept); the word shown is the provider's, or
        // the table's own when it matched by reason (`host-not-allowed`, `frequency cap`).
        let guide = FailureGuide.entry(platform: platform?.rawValue, code: result.code, reason: result.reason)
        self.init(at: at, code: code, reason: Self.word(result.reason) ?? guide.reason, meaning: guide.meaning)
    }

    /// The reason's first word when it looks like a provider's error name: a letter, then letters,
    /// digits, `_` or `-`, 3 to 48 of them, at least one upper-case letter (`BadDeviceToken`,
    /// `INVALID_ARGUMENT`). An English word (`connection`, `no`) is not one; neither is a hex device
    /// token (no upper case) or an FCM token or URL (too long, `:` and `/` end the word before).
    public static func word(_ reason: String?) -> String? {
        guard let reason else { return nil }
        let first = leadingWord(reason)
        guard (3...48).contains(first.utf8.count), let head = first.unicodeScalars.first, head.isASCIILetter,
              first.unicodeScalars.allSatisfy({ $0.isASCIILetter || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }),
              first.unicodeScalars.contains(where: { ("A"..."Z").contains($0) }) else { return nil }
        // A word that runs straight on into more of a token or URL (`AAAA:APA91b…`, `https://`) is not a name.
        let rest = reason.dropFirst(first.count)
        if rest.hasPrefix(":"), let after = rest.dropFirst().first, after != " " { return nil }
        return first
    }

    /// The code as a label: HTTP statuses and short local words; anything else is `other`.
    public static func safeCode(_ code: String?) -> String {
        guard let code, !code.isEmpty, code.utf8.count <= 16,
              code.unicodeScalars.allSatisfy({ $0.isASCIILetter || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }) else {
            return code == nil || code == "" ? "none" : "other"
        }
        return code
    }

    /// What `FailureGuide.entry` matches a reason by: its text up to a space, `:` or `(`.
    static func leadingWord(_ reason: String) -> String {
        String(reason.prefix { $0 != ":" && $0 != " " && $0 != "(" })
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
