import PushspoolCore

/// The hub's limits on a send's audience, checked before anything is sent so a job beyond them
/// fails with a clear reason instead of a 400 from the hub (Microsoft's routing and tag
/// expressions page).
public enum AzureHubLimits {
    /// Tags in an expression that uses only `||`.
    public static let maxTagsOrOnly = 20
    /// Tags in an expression that uses `&&` or `!`.
    public static let maxTagsMixed = 6
    /// A tag: up to 120 characters of letters, digits and `_ @ # . : -`.
    public static let maxTagLength = 120

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

    static func tagProblem(_ tag: String) -> String? {
        if tag.isEmpty { return "empty tag in tag expression" }
        if tag.count > maxTagLength {
            return "tag \"\(tag.prefix(40))…\" is longer than \(maxTagLength) characters, the hub's limit"
        }
        if let bad = tag.unicodeScalars.first(where: { !allowed.contains($0) }) {
            return "tag \"\(tag)\" contains \"\(bad)\"; hub tags allow only letters, digits and _ @ # . : -"
        }
        return nil
    }

    private static let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@#.:-".unicodeScalars)
}
