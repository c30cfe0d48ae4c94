/// A tag expression in Azure Notification Hubs syntax: tags joined by `&&`, `||`, `!` and
/// parentheses. Precedence: `!` binds tightest, then `&&`, then `||`.
/// `TagExpression.parse(_:)` (TagExpression+Parser.swift) builds one from text.
public indirect enum TagExpression: Sendable, Hashable {
    case tag(String)
    case not(TagExpression)
    case and(TagExpression, TagExpression)
    case or(TagExpression, TagExpression)

    /// Whether a device carrying `tags` is selected.
    public func matches(_ tags: Set<String>) -> Bool {
        switch self {
        case .tag(let t): return tags.contains(t)
        case .not(let e): return !e.matches(tags)
        case .and(let a, let b): return a.matches(tags) && b.matches(tags)
        case .or(let a, let b): return a.matches(tags) || b.matches(tags)
        }
    }

    /// Every tag named, in order of appearance, duplicates kept (hub limits count them).
    public var tags: [String] {
        switch self {
        case .tag(let t): return [t]
        case .not(let e): return e.tags
        case .and(let a, let b), .or(let a, let b): return a.tags + b.tags
        }
    }

    /// The operands of a run of `&&` (`and: true`) or `||` at the top of this expression, left
    /// to right, without recursion (a run of thousands compiles without deep stacks).
    public func operands(and: Bool) -> [TagExpression] {
        var out: [TagExpression] = []
        var stack = [self]
        while let top = stack.popLast() {
            switch (top, and) {
            case (.and(let a, let b), true), (.or(let a, let b), false):
                stack.append(b)
                stack.append(a)
            default:
                out.append(top)
            }
        }
        return out
    }

    /// True when the expression uses no operator other than `||` (hubs then allow 20 tags, else 6).
    public var usesOnlyOr: Bool {
        switch self {
        case .tag: return true
        case .not, .and: return false
        case .or(let a, let b): return a.usesOnlyOr && b.usesOnlyOr
        }
    }
}
