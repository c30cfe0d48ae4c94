/// The one table from a Huawei Push Kit answer to what becomes of each token of the request
/// (README: "How answers are handled"). Pure, so it is tested row by row. Push Kit answers
/// `{"code","msg","requestId"}`, with HTTP 200 even for most failures.
public enum HMSClassifier {
    /// What one answer means for the request's tokens.
    public enum Verdict: Sendable, Equatable {
        /// Every token of the request alike.
        case each(Disposition)
        /// `80100000`: the listed tokens are invalid (each `deviceGone`), every other token
        /// was accepted (`delivered`: never sent again).
        case partial(illegal: Set<String>)

        /// The disposition of one token of the request.
        public func disposition(of token: String) -> Disposition {
            switch self {
            case .each(let d): d
            case .partial(let illegal): illegal.contains(token) ? .deviceGone(since: nil) : .delivered
            }
        }
    }

    /// `status`: the HTTP status; `code`: the body's `code` (nil when there was no readable body);
    /// `msg`: the body's `msg`; `retryAfter`: a `Retry-After` in seconds, when present.
    public static func verdict(status: Int, code: String?, msg: String?, retryAfter: Double? = nil) -> Verdict {
        switch (status, code) {
        case (200, "80000000"?):
            return .each(.delivered)
        // Some tokens sent: `msg` is a JSON string naming the illegal ones. Without a readable
        // list nobody can tell which were sent: none is sent again and none counted delivered.
        case (_, "80100000"?):
            guard let illegal = msg.flatMap(illegalTokens) else { return .each(.rejected) }
            return .partial(illegal: illegal)
        // The message itself is wrong (parameters, structure, a ttl already past (80100004), an
        // invalid collapse_key (80100013), sensitive content, over 4,096 bytes without its tokens
        // (80300008), a high-priority message the app has no permission for (80300011)): any
        // resend of the same bytes fails alike, while the app's other messages may go.
        case (_, "80100001"?), (_, "80100003"?), (_, "80100004"?), (_, "80100013"?), (_, "80100016"?),
             (_, "80300008"?), (_, "80300011"?):
            return .each(.rejected)
        // The token expired (80200003), is not accepted (80200001: missing, another app's), or
        // Push Kit could not check it with the OAuth service (80600003, "check the client id and
        // secret"): refreshed and retried once; a second refusal in a row pauses the provider.
        case (_, "80200001"?), (_, "80200003"?), (_, "80600003"?):
            return .each(.refreshCredentials)
        // No permission to send: configuration, for every request alike.
        case (_, "80300002"?):
            return .each(.credentialsBroken)
        // Every token of the request is invalid.
        case (_, "80300007"?):
            return .each(.deviceGone(since: nil))
        // Token count outside 1–1,000: the provider never sends that, so a bug: fail, not retry.
        case (_, "80300010"?):
            return .each(.rejected)
        case (_, "81000001"?):
            return .each(.retry(after: retryAfter))
        case (401, _):
            return .each(.refreshCredentials)
        // 403, and 404 ("service not found: check the request URI"): the endpoint or app id in
        // the configuration, the same for every request: the provider pauses.
        case (403, _), (404, _):
            return .each(.credentialsBroken)
        case (429, _), (500...599, _):
            return .each(.retry(after: retryAfter))
        // Any other code or status (codes added later included): the request was refused.
        default:
            return .each(.rejected)
        }
    }

    /// The tokens a partial answer's `msg` names: `{"success":n,"failure":m,"illegal_tokens":[…]}`.
    /// Huawei's documents spell the member `illegal_tokens` and `illegalTokens` in different
    /// versions: either is read. Nil when `msg` holds no such list.
    public static func illegalTokens(_ msg: String) -> Set<String>? {
        guard let json = try? JSONParser.parse(Array(msg.utf8)),
              let list = json["illegal_tokens"] ?? json["illegalTokens"], case .array(let items) = list else { return nil }
        return Set(items.compactMap(\.stringValue))
    }
}
