import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolCLI

/// Issue 24, "a strict command line": every command refuses a word or an option it does not
/// take (exit 64, naming it, with a "did you mean" for near misses), instead of ignoring it.
@Suite struct StrictCommandLineTests {
    /// A command's words up to the last one it takes (its subcommand, a job id, a file).
    static func takenWords(_ spec: CLI.Command) -> [String]? {
        switch spec.positionals {
        case .none: return []
        case .upTo(let n, _): return Array(repeating: "word1", count: n)
        case .subcommand(let name): return [name]
        case .words(let lists, let extra, _): return lists.map { $0[0] } + Array(repeating: "word1", count: extra)
        case .many: return nil   // validate: every word is a file to check
        }
    }

    static func oneLine(_ r: RunResult) -> Bool {
        r.stderr.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").count == 1
    }

    @Test("every command in the table refuses a stray word and a misspelt option, naming it")
    func everyCommand() throws {
        let dir = TempDir("pushspool-cli")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        #expect(CLI.commands.count >= 17)
        for (name, spec) in CLI.commands.sorted(by: { $0.key < $1.key }) {
            if let words = Self.takenWords(spec) {
                let stray = try runPushspool([name] + words + ["zzqqxx"] + spool, cwd: dir.url, timeout: 30)
                #expect(stray.status == 64, "\(name): \(stray.stdout) \(stray.stderr)")
                #expect(stray.stderr.contains("\(name): unexpected argument \"zzqqxx\""), "\(name): \(stray.stderr)")
                #expect(Self.oneLine(stray), "\(name): \(stray.stderr)")
                // The stray word before the options is refused the same way.
                let first = try runPushspool([name] + words + ["zzqqxx"], cwd: dir.url, timeout: 30)
                #expect(first.status == 64 && first.stderr.contains("unexpected argument \"zzqqxx\""), "\(name): \(first.stderr)")
            }
            // A misspelt option: the command's longest own option (or --spool) with one letter more.
            let own = spec.valued.union(spec.repeatable).union(spec.switches)
            let flag = own.max { ($0.count, $1) < ($1.count, $0) } ?? "spool"
            let typo = try runPushspool([name, "--\(flag)x"] + spool, cwd: dir.url, timeout: 30)
            #expect(typo.status == 64, "\(name): \(typo.stderr)")
            #expect(typo.stderr.contains("\(name): unknown option --\(flag)x (did you mean --\(flag)?)"), "\(name): \(typo.stderr)")
            #expect(Self.oneLine(typo), "\(name): \(typo.stderr)")
            // A word nothing like any option gets no suggestion, but is still named.
            let far = try runPushspool([name, "--zzqqxx"] + spool, cwd: dir.url, timeout: 30)
            #expect(far.status == 64 && far.stderr.contains("unknown option --zzqqxx;"), "\(name): \(far.stderr)")
            // A command with a subcommand refuses another, suggesting its own when near.
            var subcommand: String?
            switch spec.positionals {
            case .subcommand(let sub): subcommand = sub
            case .words(let lists, _, _): subcommand = lists.first?.first
            default: break
            }
            if let sub = subcommand {
                let wrong = try runPushspool([name, String(sub.dropLast())] + spool, cwd: dir.url, timeout: 30)
                #expect(wrong.status == 64, "\(name): \(wrong.stderr)")
                #expect(wrong.stderr.contains("unknown subcommand \"\(sub.dropLast())\" (did you mean \"\(sub)\"?)"), "\(name): \(wrong.stderr)")
            }
        }
        #expect(dir.list("spool/incoming").isEmpty, "nothing was submitted")
    }

    @Test("the issue's cases: nothing sent, created or registered when a word is left over")
    func issueCases() throws {
        let dir = TempDir("pushspool-cli")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)

        let dinner = try runPushspool(["submit", "--to-tag", "username:bob", "--pns", "fcm", "--message", "Dinner", "is", "ready", "--id", "x"] + spool)
        #expect(dinner.status == 64)
        #expect(dinner.stderr.contains(#"unexpected argument "is" (--message takes one value; quote a value with spaces: --message "Dinner is ready")"#), "\(dinner.stderr)")
        #expect(dir.list("spool/incoming").isEmpty)

        let initPath = try runPushspool(["init", dir.path("newspool")], cwd: dir.url)
        #expect(initPath.status == 64)
        #expect(initPath.stderr.contains("init: unexpected argument \"\(dir.path("newspool"))\""), "\(initPath.stderr)")
        #expect(initPath.stderr.contains("--spool \(dir.path("newspool"))"), "\(initPath.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("newspool")))
        #expect(!FileManager.default.fileExists(atPath: dir.path("jobs")), "the default spool was not touched either")

        let status = try runPushspool(["status", "/other/spool"] + spool)
        #expect(status.status == 64 && status.stderr.contains("status: unexpected argument \"/other/spool\""), "\(status.stderr)")
        let run = try runPushspool(["run", "--once", "extra"] + spool)
        #expect(run.status == 64 && run.stderr.contains("run: unexpected argument \"extra\" (run takes no arguments, only options)"), "\(run.stderr)")

        let carol = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-carol", "--tag", "username:carol", "follows_RedSox"] + spool)
        #expect(carol.status == 64)
        #expect(carol.stderr.contains("--tag takes one value; repeat it for each: --tag username:carol --tag follows_RedSox"), "\(carol.stderr)")
        #expect(try runPushspool(["devices", "--count"] + spool).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // Repeated, both tags are kept.
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-carol", "--tag", "username:carol", "--tag", "follows_RedSox"] + spool).status == 0)
        #expect(try runPushspool(["devices", "--tags", "follows_RedSox", "--count"] + spool).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try runPushspool(["devices", "--tags", "username:carol", "--count"] + spool).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")

        // Near misses of options and commands.
        let onse = try runPushspool(["run", "--onse"] + spool)
        #expect(onse.status == 64 && onse.stderr.contains("run: unknown option --onse (did you mean --once?)"), "\(onse.stderr)")
        let toTags = try runPushspool(["submit", "--to-tags", "username:bob", "--pns", "fcm", "--message", "hi"] + spool)
        #expect(toTags.status == 64 && toTags.stderr.contains("submit: unknown option --to-tags (did you mean --to-tag?)"), "\(toTags.stderr)")
        let regster = try runPushspool(["regster", "--platform", "fcm"] + spool)
        #expect(regster.status == 64 && regster.stderr.contains(#"unknown command "regster" (did you mean "register"?)"#), "\(regster.stderr)")
        let statusWord = try runPushspool(["status", "json"] + spool)
        #expect(statusWord.status == 64 && statusWord.stderr.contains("did you mean --json?"), "\(statusWord.stderr)")

        // An option that takes one value, given twice, is refused rather than one being dropped.
        let twice = try runPushspool(["submit", "--to-tag", "a", "--pns", "fcm", "--message", "one", "--message", "two"] + spool)
        #expect(twice.status == 64 && twice.stderr.contains(#"--message takes one value and was given twice ("one", "two")"#), "\(twice.stderr)")
        let switchValue = try runPushspool(["run", "--once=yes"] + spool)
        #expect(switchValue.status == 64 && switchValue.stderr.contains("--once takes no value"), "\(switchValue.stderr)")
        let dash = try runPushspool(["status", "-j"] + spool)
        #expect(dash.status == 64 && dash.stderr.contains("unknown option --j"), "\(dash.stderr)")
        let steer = try runPushspool(["cancel", "a", "b"] + spool)
        #expect(steer.status == 64 && steer.stderr.contains("cancel: unexpected argument \"b\" (cancel takes one job id)"), "\(steer.stderr)")
        #expect(dir.list("spool/incoming").isEmpty && dir.list("spool/control").isEmpty)
    }

    @Test("help: init listed first, init mentions control/, every command's help names each option it takes")
    func help() throws {
        let top = try runPushspool(["--help"]).stdout
        let rows = top.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
        #expect(rows.first?.hasPrefix("  init ") == true, "\(top)")
        for name in CLI.commands.keys {
            #expect(top.contains("\n  \(name)") || top.contains("|\(name)"), "pushspool --help lists \(name)")
        }
        #expect(try runPushspool(["init", "--help"]).stdout.contains("control/"))
        for (name, spec) in CLI.commands {
            let help = try runPushspool([name, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("usage: pushspool \(name)"), "\(name)")
            for option in spec.valued.union(spec.repeatable).union(spec.switches).union(["spool", "config", "log-format", "log-level"]) {
                #expect(help.stdout.contains("--\(option)"), "\(name) --help names --\(option)")
            }
            for option in spec.repeatable {
                #expect(help.stdout.contains("repeat --\(option)"), "\(name) --help says --\(option) is repeated")
            }
        }
    }
}
