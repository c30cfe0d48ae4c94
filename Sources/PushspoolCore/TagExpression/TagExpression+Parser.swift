/// Parsing and printing of tag expressions in Azure Notification Hubs syntax.
///
/// Grammar (whitespace allowed between tokens):
///
///     or    := and ("||" and)*          left-associative
///     and   := unary ("&&" unary)*      left-associative
///     unary := "!" unary | "(" or ")" | TAG
///     TAG   := [A-Za-z0-9_@#.:-]{1,120}
///
/// Errors carry the 0-based character offset of the offending token so that `validate` and the
/// CLI can point at it; positions count Characters, which for valid input is the same as bytes.
extension TagExpression {
    /// The longest tag Notification Hubs accepts.
    public static let maxTagLength = 120
    /// Nesting of `(` and `!` beyond this is refused: the parser, `matches` and the registry's SQL
    /// all recurse, and no real audience needs it.
    public static let maxNesting = 64

    /// Parses `text`. Precedence `!` > `&&` > `||`; `&&` and `||` are left-associative.
    public static func parse(_ text: String) throws(TagExpressionError) -> TagExpression {
        var parser = TagExpressionParser(tokens: try TagExpressionLexer.tokens(of: text))
        return try parser.parseExpression()
    }

    /// Whether `tag` is a syntactically valid tag: 1–120 characters of `[A-Za-z0-9_@#.:-]`.
    public static func isValidTag(_ tag: Substring) -> Bool {
        guard !tag.isEmpty, tag.utf8.count <= maxTagLength else { return false }
        return tag.utf8.allSatisfy(isTagByte)
    }

    /// Whether `tag` is a valid tag (see `isValidTag(_: Substring)`).
    public static func isValidTag(_ tag: String) -> Bool { isValidTag(tag[...]) }

    /// Fully parenthesised canonical text: every `&&`/`||` pair is wrapped in parentheses and
    /// `!` is written directly before its operand, e.g. `a || b && !c` → `(a || (b && !c))`.
    public var canonical: String {
        switch self {
        case .tag(let t): return t
        case .not(let e): return "!" + e.canonical
        case .and(let a, let b): return "(\(a.canonical) && \(b.canonical))"
        case .or(let a, let b): return "(\(a.canonical) || \(b.canonical))"
        }
    }

    static func isTagByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."),
             UInt8(ascii: ":"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    static func isTagCharacter(_ c: Character) -> Bool {
        guard let a = c.asciiValue else { return false }
        return isTagByte(a)
    }
}

/// One lexical token with the character offset where it starts.
struct TagExpressionToken: Equatable {
    enum Kind: Equatable {
        case tag(String), and, or, not, open, close, end
    }
    var kind: Kind
    var position: Int

    /// How messages quote the token.
    var quoted: String {
        switch kind {
        case .tag(let t): return "'\(t)'"
        case .and: return "'&&'"
        case .or: return "'||'"
        case .not: return "'!'"
        case .open: return "'('"
        case .close: return "')'"
        case .end: return "the end"
        }
    }
}

enum TagExpressionLexer {
    static func tokens(of text: String) throws(TagExpressionError) -> [TagExpressionToken] {
        let chars = Array(text)
        var out: [TagExpressionToken] = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            switch c {
            case " ", "\t", "\n", "\r", "\r\n":
                i += 1
            case "(": out.append(.init(kind: .open, position: i)); i += 1
            case ")": out.append(.init(kind: .close, position: i)); i += 1
            case "!": out.append(.init(kind: .not, position: i)); i += 1
            case "&", "|":
                // Hubs only know the doubled forms; a lone `&` is almost always a typo for `&&`.
                guard i + 1 < chars.count, chars[i + 1] == c else {
                    throw TagExpressionError(position: i, message: "expected '\(c)\(c)', found '\(c)'")
                }
                out.append(.init(kind: c == "&" ? .and : .or, position: i))
                i += 2
            default:
                guard TagExpression.isTagCharacter(c) else {
                    throw TagExpressionError(position: i, message: "invalid character \(describe(c))")
                }
                let start = i
                while i < chars.count, TagExpression.isTagCharacter(chars[i]) { i += 1 }
                if i < chars.count, !isDelimiter(chars[i]) {
                    throw TagExpressionError(position: i, message: "invalid character \(describe(chars[i])) in tag")
                }
                guard i - start <= TagExpression.maxTagLength else {
                    throw TagExpressionError(position: start,
                                             message: "tag longer than \(TagExpression.maxTagLength) characters")
                }
                out.append(.init(kind: .tag(String(chars[start..<i])), position: start))
            }
        }
        out.append(.init(kind: .end, position: chars.count))
        return out
    }

    /// Characters that may end a tag without whitespace (`a&&b`, `(a)`, `a||!b`).
    private static func isDelimiter(_ c: Character) -> Bool {
        [" ", "\t", "\n", "\r", "\r\n", "(", ")", "!", "&", "|"].contains(c)
    }

    /// Quotes a character for a message; control and non-ASCII characters by code point, since
    /// they are usually invisible or mangled in a terminal.
    static func describe(_ c: Character) -> String {
        if let a = c.asciiValue, a >= 0x20, a < 0x7F { return "'\(c)'" }
        return c.unicodeScalars.map { "U+" + hex4($0.value) }.joined(separator: " ")
    }

    private static func hex4(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }
}

/// Recursive descent over the token list; `previous` names the last consumed token so that a
/// missing operand can be reported as "expected a tag after '&&'".
struct TagExpressionParser {
    let tokens: [TagExpressionToken]
    var index = 0
    var nesting = 0

    init(tokens: [TagExpressionToken]) { self.tokens = tokens }

    var current: TagExpressionToken { tokens[index] }
    var previous: TagExpressionToken? { index > 0 ? tokens[index - 1] : nil }

    mutating func parseExpression() throws(TagExpressionError) -> TagExpression {
        let e = try parseOr()
        switch current.kind {
        case .end: return e
        case .close: throw fail("unbalanced ')'")
        default: throw fail("expected '&&' or '||' before \(current.quoted)")
        }
    }

    mutating func parseOr() throws(TagExpressionError) -> TagExpression {
        var e = try parseAnd()
        while current.kind == .or {
            index += 1
            e = .or(e, try parseAnd())
        }
        return e
    }

    mutating func parseAnd() throws(TagExpressionError) -> TagExpression {
        var e = try parseUnary()
        while current.kind == .and {
            index += 1
            e = .and(e, try parseUnary())
        }
        return e
    }

    mutating func parseUnary() throws(TagExpressionError) -> TagExpression {
        let token = current
        switch token.kind {
        case .tag(let t):
            index += 1
            return .tag(t)
        case .not:
            try enter()
            index += 1
            let operand = try parseUnary()
            nesting -= 1
            return .not(operand)
        case .open:
            try enter()
            index += 1
            let inner = try parseOr()
            switch current.kind {
            case .close: break
            case .end: throw fail("expected ')' to close '(' at position \(token.position)")
            default: throw fail("expected '&&' or '||' before \(current.quoted)")
            }
            index += 1
            nesting -= 1
            return inner
        case .close, .and, .or, .end:
            if let previous { throw fail("expected a tag after \(previous.quoted)") }
            switch token.kind {
            case .end: throw fail("empty expression")
            case .close: throw fail("unbalanced ')'")
            default: throw fail("expected a tag before \(token.quoted)")
            }
        }
    }

    private mutating func enter() throws(TagExpressionError) {
        nesting += 1
        guard nesting <= TagExpression.maxNesting else {
            throw fail("nested more than \(TagExpression.maxNesting) levels deep")
        }
    }

    private func fail(_ message: String) -> TagExpressionError {
        TagExpressionError(position: current.position, message: message)
    }
}
