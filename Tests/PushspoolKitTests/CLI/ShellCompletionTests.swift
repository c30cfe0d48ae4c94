import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolCLI

/// Issue 46: `pushspool completions bash|zsh|fish` completes the commands, options and words of
/// the command table, the same table `--help` and the parser read. Bash's completion function is
/// run as bash runs it (COMP_WORDS, COMP_CWORD); zsh's script completes in zsh's own line
/// editor on a pseudo-terminal, fish's in fish's completion engine, and both pass their parsers.
@Suite struct ShellCompletionTests {
    static func shell(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// What bash's completion offers for a command line whose last word is being typed.
    static func bashCompletes(_ script: URL, _ words: [String]) throws -> [String] {
        let program = #"source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _pushspool; printf '%s\n' "${COMPREPLY[@]}""#
        let r = try runPushspoolVia("/bin/bash", ["-c", program, script.path, "pushspool"] + words)
        #expect(r.status == 0, "\(words): \(r.stderr)")
        #expect(r.stderr.isEmpty, "\(words): \(r.stderr)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    static func script(_ shell: String, in dir: TempDir) throws -> URL {
        let r = try runPushspool(["completions", shell])
        #expect(r.status == 0, "\(r.stderr)")
        let url = dir.url.appendingPathComponent("pushspool.\(shell)")
        try r.stdout.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test func bashOffersRealCommandsOptionsAndWords() throws {
        let dir = TempDir("completions")
        let script = try Self.script("bash", in: dir)
        #expect(try Self.bashCompletes(script, ["reg"]) == ["register", "registry"])
        #expect(try Self.bashCompletes(script, ["run", "--o"]) == ["--once"])
        #expect(try Self.bashCompletes(script, ["apns", "ch"]) == ["channels"])
        #expect(try Self.bashCompletes(script, ["apns", "channels", "--app", "shop", "d"]) == ["delete"], "an option's value is not a word")
        #expect(try Self.bashCompletes(script, ["registry", ""]) == ["migrate", "backup"])
        #expect(try Self.bashCompletes(script, ["devices", "--platform", "w"]) == ["wns", "web"])
        #expect(try Self.bashCompletes(script, ["run", "--log-format", ""]) == StreamLogHandler.Format.allCases.map(\.rawValue))
        #expect(try Self.bashCompletes(script, ["completions", ""]) == ["bash", "zsh", "fish"])
        // Every command, and every option of every command, as the table has them.
        let all = try Self.bashCompletes(script, [""])
        for command in CLI.table {
            #expect(all.contains(command.name), "\(command.name) is offered")
            let options = try Self.bashCompletes(script, [command.name, "--"])
            #expect(Set(options) == Set(command.options.map { "--\($0)" } + ["--help"]), "\(command.name): \(options)")
            // And each is an option the parser takes.
            for option in command.options where command.switches.contains(option) {
                #expect(throws: Never.self) { _ = try CLI.parse(command: command.name, ["--\(option)"]) }
            }
        }
    }

    @Test(.enabled(if: shell("zsh") != nil)) func zshParsesAndLoadsIt() throws {
        let dir = TempDir("completions")
        let script = try Self.script("zsh", in: dir)
        let syntax = try runPushspoolVia(Self.shell("zsh")!, ["-n", script.path])
        #expect(syntax.status == 0, "\(syntax.stderr)")
        let load = try runPushspoolVia(Self.shell("zsh")!, ["-f", "-c", "autoload -U compinit; compinit -u -D; source \"$0\"; print $+functions[_pushspool]; print -l ${(k)_comps[pushspool]}", script.path])
        #expect(load.status == 0 && load.stdout.hasPrefix("1\n"), "\(load.stdout)\(load.stderr)")
        #expect(load.stdout.contains("pushspool"), "compdef registered it: \(load.stdout)")
    }

    /// zsh completes only inside its line editor: an interactive zsh on a pseudo-terminal
    /// (`zpty`) loads the script, is sent a line and a Tab, and its screen is read until it shows
    /// `expected` (20 s at most).
    static let zshDriver = #"""
        zmodload zsh/zpty
        zpty z zsh -f -i
        zpty -w z "PS1='> '; autoload -U compinit; compinit -u -D; source $1"
        zpty -w -n z "$2"$'\t'
        out=""
        for i in {1..200}; do
            while zpty -r -t z chunk; do out+=$chunk; done
            [[ $out == *"$3"* ]] && break
            sleep 0.1
        done
        zpty -d z
        print -r -- "$out"
        """#

    @Test(.enabled(if: shell("zsh") != nil)) func zshCompletesInItsLineEditor() throws {
        let dir = TempDir("completions")
        let script = try Self.script("zsh", in: dir)
        dir.write("driver.zsh", Self.zshDriver)
        for (line, expected) in [("pushspool reg", "pushspool regist"), ("pushspool run --on", "pushspool run --once"),
                                 ("pushspool apns channels ", "create  delete  list")] {
            let r = try runPushspoolVia(Self.shell("zsh")!, ["-f", dir.path("driver.zsh"), script.path, line, expected])
            #expect(r.stdout.contains(expected), "\(line): \(r.stdout.suffix(300))")
        }
    }

    @Test(.enabled(if: shell("fish") != nil)) func fishCompletesFromIt() throws {
        let dir = TempDir("completions")
        let script = try Self.script("fish", in: dir)
        let syntax = try runPushspoolVia(Self.shell("fish")!, ["--no-execute", script.path])
        #expect(syntax.status == 0, "\(syntax.stderr)")
        func complete(_ line: String) throws -> [String] {
            let r = try runPushspoolVia(Self.shell("fish")!, ["--no-config", "-c", "source $argv[1]; complete -C $argv[2]", script.path, line])
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        }
        #expect(try complete("pushspool reg") == ["register", "registry"])
        #expect(try complete("pushspool apns channels ") == ["create", "delete", "list"])
        #expect(try complete("pushspool run --on") == ["--once"])
    }
}
