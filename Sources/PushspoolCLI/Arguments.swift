import PushspoolKit
import PushspoolCore

/// A small, strict command-line parser: `--flag`, `--option value` (or `--option=value`), and
/// the positionals a command declares. Anything else is refused, named, with a "did you mean"
/// for near misses: an extra word never silently changes what is sent or where.
struct Arguments {
    struct UsageError: Error, CustomStringConvertible { var description: String }

    /// The words (not options) a command takes.
    enum Positionals: Sendable {
        /// None: every word is refused.
        case none
        /// Up to `count` words, described as `what` ("one job id"); the command checks that they are there.
        case upTo(Int, String)
        /// Any number of words (the command checks that there is at least one).
        case many(String)
        /// Exactly one word, which must be `name` (`hub sync`, `webpush keygen`).
        case subcommand(String)
        /// A word from each list in turn (`apns channels create|list|delete`), then up to `extra`
        /// more words (`registry backup FILE`), described as `what`; the command checks that they
        /// are all there.
        case words([[String]], extra: Int, String)
    }

    private(set) var options: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// `valued`: option names that take one value; `repeatable`: those of them that may be given
    /// several times (each time one value); `switches`: names that take none. `command` names
    /// the command in messages.
    init(_ args: [String], command: String = "", valued: Set<String>, repeatable: Set<String> = [],
         switches: Set<String>, positionals allowed: Positionals = .many("")) throws(UsageError) {
        let known = valued.union(repeatable).union(switches)
        func option(_ name: String) -> String {
            let hint = Spelling.closest(to: name, among: known).map { " (did you mean --\($0)?)" } ?? ""
            return "unknown option --\(name)\(hint)"
        }
        var i = 0
        var afterDoubleDash = false
        /// The option whose value the previous word was, for the hint on a stray word after it.
        var lastValued: String?
        while i < args.count {
            let a = args[i]
            defer { i += 1 }
            if !afterDoubleDash && a == "--" {
                afterDoubleDash = true
                lastValued = nil
                continue
            }
            if !afterDoubleDash && a.hasPrefix("--") {
                var name = String(a.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                lastValued = nil
                if switches.contains(name) {
                    if let inline { throw UsageError(description: "--\(name) takes no value (given \"\(inline)\")") }
                    flags.insert(name)
                } else if valued.contains(name) || repeatable.contains(name) {
                    let value: String
                    if let inline {
                        value = inline
                    } else {
                        guard i + 1 < args.count else { throw UsageError(description: "--\(name) needs a value") }
                        i += 1
                        value = args[i]
                        lastValued = name
                    }
                    if let earlier = options[name]?.first, !repeatable.contains(name) {
                        throw UsageError(description: "--\(name) takes one value and was given twice (\"\(earlier)\", \"\(value)\")")
                    }
                    options[name, default: []].append(value)
                } else {
                    throw UsageError(description: option(name))
                }
                continue
            }
            if !afterDoubleDash && a.count > 1 && a.hasPrefix("-") {
                throw UsageError(description: option(String(a.drop { $0 == "-" })))
            }
            let previous = lastValued
            lastValued = nil
            switch allowed {
            case .many:
                positionals.append(a)
                continue
            case .upTo(let count, _) where positionals.count < count:
                positionals.append(a)
                continue
            case .words(let lists, let extra, _) where positionals.count < lists.count + extra:
                if positionals.count < lists.count {
                    let choices = lists[positionals.count]
                    guard choices.contains(a) else {
                        let near = Spelling.closest(to: a, among: choices).map { " (did you mean \"\($0)\"?)" } ?? ""
                        let before = ([command] + positionals).joined(separator: " ")
                        throw UsageError(description: "unknown subcommand \"\(a)\"\(near); expected "
                                                      + choices.map { "`\(before) \($0)`" }.joined(separator: " or "))
                    }
                }
                positionals.append(a)
                continue
            case .subcommand(let name) where positionals.isEmpty:
                guard a == name else {
                    let near = Spelling.closest(to: a, among: [name]).map { " (did you mean \"\($0)\"?)" } ?? ""
                    throw UsageError(description: "unknown subcommand \"\(a)\"\(near); the only subcommand is `\(command) \(name)`")
                }
                positionals.append(a)
                continue
            default:
                break
            }
            // A word the command does not take: say which, and the likeliest reason.
            var reason: String
            switch allowed {
            case .none: reason = "\(command) takes no arguments, only options"
            case .upTo(_, let what), .words(_, _, let what): reason = "\(command) takes \(what)"
            case .subcommand(let name): reason = "\(command) takes only its subcommand, `\(command) \(name)`"
            case .many: reason = ""
            }
            if let previous {
                if repeatable.contains(previous) {
                    reason = "--\(previous) takes one value; repeat it for each: --\(previous) \(args[i - 1]) --\(previous) \(a)"
                } else {
                    let words = args[(i - 1)...].prefix { !$0.hasPrefix("-") }
                    reason = "--\(previous) takes one value; quote a value with spaces: --\(previous) \"\(words.joined(separator: " "))\""
                }
            } else if let near = Spelling.closest(to: a, among: known) {
                reason = "did you mean --\(near)?"
            } else if a.contains("/"), known.contains("spool") {
                reason += "; a spool is given as --spool \(a)"
            }
            throw UsageError(description: "unexpected argument \"\(a)\" (\(reason))")
        }
    }

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}
