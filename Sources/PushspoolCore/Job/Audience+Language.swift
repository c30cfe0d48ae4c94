/// Splitting an audience by language for a hub, which resolves tags itself and so cannot pick a
/// text per device the way the local registry can. A device registered with language X carries
/// the installation tags `lang:X` and `lang:<primary of X>` (`LanguageTag.hubTags`), so each text
/// of a localized job becomes one send whose expression is narrowed to exactly the devices whose
/// best match (`LanguageTag.bestMatch`) is that text:
///
///     language L:  (<audience>) && lang:L && !lang:M …   for every key M more specific than L (pt-BR for pt)
///     default:     (<audience>) && !lang:K …             for every key K
///
/// Every device then receives exactly one text, as on direct routes.
extension Audience {
    /// The audience of the send of `language`'s text (nil: the job's default text), given all
    /// the job's `languages`.
    public func narrowed(to language: LanguageTag?, among languages: Set<LanguageTag>) -> Audience {
        guard !languages.isEmpty else { return self }
        var clauses: [TagExpression] = []
        var text: [String] = []
        if let language {
            clauses.append(.tag(language.hubTag))
            text.append(language.hubTag)
            for more in languages.sorted() where more != language && more.primary == language {
                clauses.append(.not(.tag(more.hubTag)))
                text.append("!" + more.hubTag)
            }
        } else {
            for key in languages.sorted() {
                clauses.append(.not(.tag(key.hubTag)))
                text.append("!" + key.hubTag)
            }
        }
        var expression = clauses.dropFirst().reduce(clauses[0]) { .and($0, $1) }
        if let base = tagExpression, let source = hubTags {
            expression = .and(base, expression)
            text.insert(isSingleTag ? source : "(\(source))", at: 0)
        }
        return .expression(expression, source: text.joined(separator: " && "))
    }

    private var isSingleTag: Bool {
        if case .tag? = tagExpression { return true }
        return false
    }
}
