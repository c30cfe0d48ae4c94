import PushspoolKit
import PushspoolCore

/// The completion scripts of bash, zsh and fish, written from the command table (`CLI.table`):
/// the commands with their summaries, each command's options (its own and the common ones), the
/// values of options that take one of a few, and the words a command takes at each position
/// (`apns channels create`). Nothing here lists a command or option of its own: a command added
/// to the table completes with no change here.
struct ShellCompletion {
    enum Shell: String, CaseIterable, Sendable { case bash, zsh, fish }

    let commands: [CLI.Command]

    /// The values an option takes, where they are few and known; options naming a file or a
    /// folder are completed as paths (`pathOptions`); the rest take free text.
    static let choices: [String: [String]] = [
        "platform": Platform.acceptedNames.components(separatedBy: ", "),
        "pns": Platform.acceptedNames.components(separatedBy: ", "),
        "log-format": StreamLogHandler.Format.allCases.map(\.rawValue),
        "log-level": Log.Level.allCases.map(\.label),
        "environment": APNsEnvironment.allCases.map(\.rawValue),
        "token-kind": APNsTokenKind.allCases.map(\.rawValue),
        "storage-policy": ["0", "1"],
        "by": ["tz"],
    ]
    static let pathOptions: Set<String> = ["config", "spool", "out"]

    /// The words a command takes at each position: fixed choices, then whether the words after
    /// them are files.
    static func words(_ command: CLI.Command) -> (fixed: [[String]], files: Bool) {
        switch command.positionals {
        case .none: return ([], false)
        case .subcommand(let name): return ([[name]], false)
        case .words(let lists, let extra, let what): return (lists, extra > 0 && what.contains("FILE"))
        case .upTo(_, let what), .many(let what): return ([], what.contains("FILE"))
        }
    }

    func script(for shell: Shell) -> String {
        switch shell {
        case .bash: bash()
        case .zsh: zsh()
        case .fish: fish()
        }
    }

    /// Words for a shell script's single-quoted string (none of ours holds a quote).
    private static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    // MARK: bash

    private func bash() -> String {
        let names = commands.map(\.name) + ["help"]
        var out = """
            # bash completion for pushspool \(CLI.version), from `pushspool completions bash`
            _pushspool() {
                local cur="${COMP_WORDS[COMP_CWORD]}" prev=""
                (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"
                COMPREPLY=()
                if (( COMP_CWORD <= 1 )); then
                    COMPREPLY=( $(compgen -W \(Self.quoted((names + ["--help", "--version"]).joined(separator: " "))) -- "$cur") )
                    return 0
                fi
                case "$prev" in

            """
        for option in Self.pathOptions.sorted() {
            out += "        --\(option)) COMPREPLY=( $(compgen -\(option == "spool" ? "d" : "f") -- \"$cur\") ); return 0 ;;\n"
        }
        for (option, values) in Self.choices.sorted(by: { $0.key < $1.key }) {
            out += "        --\(option)) COMPREPLY=( $(compgen -W \(Self.quoted(values.joined(separator: " "))) -- \"$cur\") ); return 0 ;;\n"
        }
        out += """
                esac
                local options="" valued="" files=0
                local -a fixed=()
                case "${COMP_WORDS[1]}" in

            """
        for command in commands {
            let valued = command.valued.union(command.repeatable).union(CLI.commonValued).sorted().map { "--\($0)" }
            let (fixed, files) = Self.words(command)
            out += "        \(command.name))\n"
            out += "            options=\(Self.quoted((command.options.map { "--\($0)" } + ["--help"]).joined(separator: " ")))\n"
            out += "            valued=\(Self.quoted(valued.joined(separator: " ")))\n"
            if !fixed.isEmpty { out += "            fixed=(\(fixed.map { Self.quoted($0.joined(separator: " ")) }.joined(separator: " ")))\n" }
            if files { out += "            files=1\n" }
            out += "            ;;\n"
        }
        out += """
                    *) return 0 ;;
                esac
                if [[ "$cur" == -* ]]; then
                    COMPREPLY=( $(compgen -W "$options" -- "$cur") )
                    return 0
                fi
                # The command's words before this one, option values skipped, say which position this is.
                local i n=0 w
                for (( i = 2; i < COMP_CWORD; i++ )); do
                    w="${COMP_WORDS[i]}"
                    case "$w" in
                        --*=*) ;;
                        --*) [[ " $valued " == *" $w "* ]] && (( i++ )) ;;
                        *) (( n++ )) ;;
                    esac
                done
                if (( n < ${#fixed[@]} )); then
                    COMPREPLY=( $(compgen -W "${fixed[n]}" -- "$cur") )
                elif (( files )); then
                    COMPREPLY=( $(compgen -f -- "$cur") )
                fi
                return 0
            }
            complete -o filenames -F _pushspool pushspool

            """
        return out
    }

    // MARK: zsh

    /// An option as `_arguments` takes it: repeatable ones starred, values completed from their
    /// choices, as paths, or not at all.
    private static func zshSpec(_ option: String, command: CLI.Command) -> String {
        let repeatable = command.repeatable.contains(option)
        let prefix = repeatable ? "*--" : "--"
        if command.switches.contains(option) { return quoted(prefix + option) }
        let action: String
        if let values = choices[option] {
            action = "(\(values.joined(separator: " ")))"
        } else if pathOptions.contains(option) {
            action = option == "spool" ? "_files -/" : "_files"
        } else {
            action = " "
        }
        return quoted("\(prefix)\(option):\(option):\(action)")
    }

    private func zsh() -> String {
        var out = """
            #compdef pushspool
            # zsh completion for pushspool \(CLI.version), from `pushspool completions zsh`
            _pushspool() {
                local -a commands
                commands=(

            """
        for command in commands {
            out += "        \(Self.quoted("\(command.name):\(command.summary.replacingOccurrences(of: ":", with: "\\:"))"))\n"
        }
        out += """
                )
                if (( CURRENT == 2 )); then
                    _describe -t commands 'pushspool command' commands
                    return
                fi
                local command=$words[2]
                shift words
                (( CURRENT-- ))
                case $command in

            """
        for command in commands {
            var specs = command.options.map { Self.zshSpec($0, command: command) } + ["'--help'"]
            let (fixed, files) = Self.words(command)
            for (i, list) in fixed.enumerated() {
                specs.append(Self.quoted("\(i + 1):word:(\(list.joined(separator: " ")))"))
            }
            if files { specs.append(Self.quoted("*:file:_files")) }
            out += "        \(command.name)) _arguments -s \(specs.joined(separator: " ")) ;;\n"
        }
        out += """
                esac
            }
            if [ "$funcstack[1]" = "_pushspool" ]; then
                _pushspool "$@"
            else
                compdef _pushspool pushspool
            fi

            """
        return out
    }

    // MARK: fish

    private func fish() -> String {
        let names = commands.map(\.name).joined(separator: " ")
        var out = """
            # fish completion for pushspool \(CLI.version), from `pushspool completions fish`
            complete -c pushspool -f
            complete -c pushspool -n 'not __fish_seen_subcommand_from \(names)' -l help -d 'show help'
            complete -c pushspool -n 'not __fish_seen_subcommand_from \(names)' -l version -d 'show the version'

            """
        for command in commands {
            out += "complete -c pushspool -n \(Self.quoted("not __fish_seen_subcommand_from \(names)")) -a \(command.name) -d \(Self.quoted(command.summary))\n"
        }
        for command in commands {
            let when = "__fish_seen_subcommand_from \(command.name)"
            for option in command.options {
                var line = "complete -c pushspool -n \(Self.quoted(when)) -l \(option)"
                if !command.switches.contains(option) {
                    line += " -r"
                    if let values = Self.choices[option] { line += " -a \(Self.quoted(values.joined(separator: " ")))" }
                    if Self.pathOptions.contains(option) { line += " -F" }
                }
                out += line + "\n"
            }
            out += "complete -c pushspool -n \(Self.quoted(when)) -l help\n"
            let (fixed, files) = Self.words(command)
            var seen: [String] = []
            for list in fixed {
                // Offered until one of them is on the line, after the words before it.
                let after = seen.isEmpty ? when : "\(when); and __fish_seen_subcommand_from \(seen.joined(separator: " "))"
                out += "complete -c pushspool -n \(Self.quoted("\(after); and not __fish_seen_subcommand_from \(list.joined(separator: " "))")) -a \(Self.quoted(list.joined(separator: " ")))\n"
                seen = list
            }
            if files { out += "complete -c pushspool -n \(Self.quoted(when)) -F\n" }
        }
        return out
    }
}
