/// FCM's topic names and condition syntax, checked before a job is accepted: FCM would refuse
/// a bad one with INVALID_ARGUMENT, and a topic job is one request, so nothing of it would go.
///
///     condition := term (("&&" | "||") term)*
///     term      := "!"? ( "(" condition ")" | quoted-topic "in" "topics" )
///
/// A quoted topic is in single or double quotes. Parsed by hand (it is tiny) so the error says
/// where it went wrong; `&&` binds tighter than `||` in FCM, which matters for evaluation, not
/// for whether the text is valid.
public enum FCMCondition {
    /// FCM's limit on topics in one condition.
    public static let maxTopics = 5
    public static let topicRule = "1 to 900 of A-Z a-z 0-9 - _ . ~ %"

    /// Whether `name` is a valid topic (`[a-zA-Z0-9-_.~%]{1,900}`, without `/topics/`).
    public static func isValidTopic(_ name: String) -> Bool {
        let utf8 = name.utf8
        return !utf8.isEmpty && utf8.count <= 900 && utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
                || b == UInt8(ascii: "~") || b == UInt8(ascii: "%")
        }
    }

    /// The topics the condition names, in order, or the first problem found.
    public static func topics(in text: String) -> Result<[String], JobProblem> {
        var parser = Parser(chars: Array(text))
        do throws(JobProblem) {
            try parser.condition(depth: 0)
            parser.skipSpace()
            guard parser.at == parser.chars.count else { throw parser.fail("expected && or || or the end") }
        } catch {
            return .failure(error)
        }
        guard parser.topics.count <= maxTopics else {
            return .failure(JobProblem(field: "fcm_condition",
                                       message: "names \(parser.topics.count) topics (FCM allows at most \(maxTopics))"))
        }
        return .success(parser.topics)
    }

    private struct Parser {
        let chars: [Character]
        var at = 0
        var topics: [String] = []

        func fail(_ what: String) -> JobProblem {
            JobProblem(field: "fcm_condition", message: "at position \(at): \(what)")
        }

        mutating func skipSpace() { while at < chars.count, chars[at] == " " { at += 1 } }

        mutating func take(_ token: String) -> Bool {
            skipSpace()
            let t = Array(token)
            guard at + t.count <= chars.count, Array(chars[at..<at + t.count]) == t else { return false }
            at += t.count
            return true
        }

        mutating func condition(depth: Int) throws(JobProblem) {
            guard depth < 16 else { throw fail("nested too deeply") }
            try term(depth: depth)
            while take("&&") || take("||") { try term(depth: depth) }
        }

        mutating func term(depth: Int) throws(JobProblem) {
            _ = take("!")
            if take("(") {
                try condition(depth: depth + 1)
                guard take(")") else { throw fail("expected ')'") }
                return
            }
            skipSpace()
            guard at < chars.count, chars[at] == "'" || chars[at] == "\"" else { throw fail("expected a quoted topic, '(' or '!'") }
            let quote = chars[at]
            let start = at + 1
            guard let end = chars[start...].firstIndex(of: quote) else { throw fail("unterminated topic name") }
            let name = String(chars[start..<end])
            guard FCMCondition.isValidTopic(name) else {
                throw fail("invalid topic \(name.isEmpty ? "''" : "'\(name)'") (expected \(FCMCondition.topicRule))")
            }
            at = end + 1
            guard take("in"), take("topics") else { throw fail("expected 'in topics' after the topic") }
            topics.append(name)
        }
    }
}
