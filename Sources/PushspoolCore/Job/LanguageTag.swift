/// A BCP 47 language tag as used for localized campaigns (`lang` on a registration, the keys of a
/// job's `localized`). Only the shape matters here, not the IANA registry: 1–8 letters, then
/// subtags of 1–8 letters or digits joined by `-` (`fr`, `pt-BR`, `zh-Hant-TW`, `es-419`).
///
/// Tags are case-insensitive; they are kept in their conventional case (`pt-br` → `pt-BR`,
/// `zh-hant` → `zh-Hant`) so that the registry, the hub's `lang:` installation tags and the job's
/// keys compare as plain strings.
public struct LanguageTag: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The canonical text, e.g. `pt-BR`.
    public let value: String

    /// Parses and canonicalizes `text`; nil when it is not a language tag.
    public init?(_ text: String) {
        let subtags = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = subtags.first, (1...8).contains(first.count), text.utf8.count <= 64,
              first.utf8.allSatisfy(Self.isLetter) else { return nil }
        var parts = [first.lowercased()]
        for subtag in subtags.dropFirst() {
            guard (1...8).contains(subtag.count), subtag.utf8.allSatisfy({ Self.isLetter($0) || Self.isDigit($0) }) else {
                return nil
            }
            switch subtag.count {
            case 2 where subtag.utf8.allSatisfy(Self.isLetter): parts.append(subtag.uppercased())   // region
            case 4 where subtag.utf8.allSatisfy(Self.isLetter): parts.append(subtag.prefix(1).uppercased() + subtag.dropFirst().lowercased())   // script
            default: parts.append(subtag.lowercased())
            }
        }
        value = parts.joined(separator: "-")
    }

    /// The primary language subtag (`pt` for `pt-BR`); the tag itself when it has no other subtag.
    public var primary: LanguageTag {
        guard let dash = value.firstIndex(of: "-") else { return self }
        return LanguageTag(canonical: String(value[..<dash]))
    }

    /// The hub installation tags that carry this language: `lang:pt-BR` and `lang:pt` for a
    /// regional tag, so a campaign localized only for `pt` reaches it.
    public var hubTags: [String] {
        primary == self ? ["lang:\(value)"] : ["lang:\(value)", "lang:\(primary.value)"]
    }

    /// The tag that selects devices of exactly this language on a hub.
    public var hubTag: String { "lang:\(value)" }

    /// The best of `available` for a device of this language: the exact tag, else its primary
    /// subtag (`pt-BR` → `pt`), else nil (the job's default text).
    public func bestMatch(in available: Set<LanguageTag>) -> LanguageTag? {
        if available.contains(self) { return self }
        let primary = primary
        return available.contains(primary) ? primary : nil
    }

    public var description: String { value }

    public static func < (a: LanguageTag, b: LanguageTag) -> Bool { a.value < b.value }

    public static let rule = "a BCP 47 language tag such as fr, pt-BR or zh-Hant"

    private init(canonical: String) { value = canonical }
    private static func isLetter(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
    private static func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
}
