import PushspoolCore

/// The hub's limits on a send's audience, checked before anything is sent so a job beyond them
/// fails with a clear reason instead of a 400 from the hub (Microsoft's routing and tag
/// expressions page).
public enum AzureHubLimits {
    /// Tags in an expression that uses only `||`.
    public static let maxTagsOrOnly = 20
    /// Tags in an expression that uses `&&` or `!`.
    public static let maxTagsMixed = 6

    /// Why the hub would refuse this audience, or nil. Broadcast has no tags and is always fine.
    public static func problem(_ audience: Audience) -> String? {
        guard let expression = audience.tagExpression else { return nil }
        let tags = expression.tags
        for tag in tags {
            if let why = tagProblem(tag) { return why }
        }
        let limit = expression.usesOnlyOr ? maxTagsOrOnly : maxTagsMixed
        if tags.count > limit {
            let kind = expression.usesOnlyOr ? "only ||" : "&& or !"
            return "tag expression has \(tags.count) tags; Azure Notification Hubs allows at most \(limit) in an expression using \(kind)"
        }
        return nil
    }

    /// Jobs are parsed with the same tag rule; this guards audiences built elsewhere.
    static func tagProblem(_ tag: String) -> String? {
        guard !TagExpression.isValidTag(tag) else { return nil }
        if tag.isEmpty { return "empty tag in tag expression" }
        if tag.utf8.count > TagExpression.maxTagLength {
            return "tag \"\(tag.prefix(40))…\" is longer than \(TagExpression.maxTagLength) characters, the hub's limit"
        }
        return "tag \"\(tag)\" is not a hub tag (letters, digits and _ @ # . : - only)"
    }
}
