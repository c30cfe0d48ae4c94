/// A small command-line parser: `--flag`, `--option value` (repeatable), and positionals.
struct Arguments {
    struct UsageError: Error, CustomStringConvertible { var description: String }

    private(set) var options: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// `valued`: option names that take a value; `switches`: names that take none.
    init(_ args: [String], valued: Set<String>, switches: Set<String>) throws(UsageError) {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a == "--" {
                positionals += args[(i + 1)...]
                break
            }
            if a.hasPrefix("--") {
                var name = String(a.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if switches.contains(name) {
                    flags.insert(name)
                } else if valued.contains(name) {
                    if let inline {
                        options[name, default: []].append(inline)
                    } else {
                        guard i + 1 < args.count else { throw UsageError(description: "--\(name) needs a value") }
                        i += 1
                        options[name, default: []].append(args[i])
                    }
                } else {
                    throw UsageError(description: "unknown option --\(name)")
                }
            } else {
                positionals.append(a)
            }
            i += 1
        }
    }

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}
