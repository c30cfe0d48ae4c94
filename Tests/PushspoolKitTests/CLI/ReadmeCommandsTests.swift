import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolCLI

/// Issue 24 items 2 and 4: the README's commands are commands this pushspool takes, and its first
/// campaign runs as written and prints what the README shows.
@Suite struct ReadmeCommandsTests {
    /// The README and the catalog's articles it leads to: every command a user may copy.
    static let readme = (["README.md"] + DocumentationLinksTests.articles.map { "\(DocumentationLinksTests.catalog)/\($0)" })
        .map { (try? String(contentsOf: Paths.packageRoot.appendingPathComponent($0), encoding: .utf8)) ?? "" }
        .joined(separator: "\n")

    /// The lines of every ```sh / ```console block, with the heading of the section they are in;
    /// a console block keeps only its `$ ` lines (the rest is output), a trailing `\\` joins lines.
    static func shellLines() -> [(section: String, line: String)] {
        var out: [(String, String)] = []
        var section = "", block: String?, pending = ""
        for raw in readme.components(separatedBy: "\n") {
            if block == nil {
                if raw.hasPrefix("#") { section = raw.trimmingCharacters(in: CharacterSet(charactersIn: "# ")) }
                if raw.hasPrefix("```sh") || raw.hasPrefix("```console") { block = String(raw.dropFirst(3)) }
                continue
            }
            if raw.hasPrefix("```") { block = nil; continue }
            var line = raw.trimmingCharacters(in: .whitespaces)
            if block == "console" {
                guard line.hasPrefix("$ ") else { continue }
                line.removeFirst(2)
            }
            if line.hasSuffix("\\") { pending += line.dropLast() + " "; continue }
            out.append((section, pending + line))
            pending = ""
        }
        return out
    }

    /// Shell words up to a comment; `&&`, `||`, `|`, `;` and redirections end a simple command
    /// (returned as separate segments). Quotes and backslashes as sh reads them.
    static func segments(_ line: String) -> [[String]] {
        var segments: [[String]] = [[]], word = "", inWord = false, quote: Character?
        var chars = Array(line)[...]
        func end() { if inWord { segments[segments.count - 1].append(word) }; word = ""; inWord = false }
        while let c = chars.popFirst() {
            if let q = quote {
                if c == q { quote = nil } else if c == "\\" && q == "\"", let n = chars.popFirst() { word.append(n) } else { word.append(c) }
                continue
            }
            switch c {
            case "'", "\"": quote = c; inWord = true
            case "\\": if let n = chars.popFirst() { word.append(n); inWord = true }
            case " ", "\t": end()
            case "#" where !inWord: end(); return segments.filter { !$0.isEmpty }
            case "&", "|", ";", ">", "<":
                end()
                if segments.last?.isEmpty == false { segments.append([]) }
                // A redirection's target is not a word of the command.
                if c == ">" || c == "<" {
                    while chars.first == ">" || chars.first == "&" || chars.first == " " { chars.removeFirst() }
                    while let n = chars.first, n != " " { chars.removeFirst() }
                }
            default: word.append(c); inWord = true
            }
        }
        end()
        return segments.filter { !$0.isEmpty }
    }

    /// Every `pushspool COMMAND …` in command position: first word of a simple command, or the
    /// command `runuser -u USER --` / `sudo -u USER` runs.
    static func invocations() -> [(section: String, words: [String])] {
        var found: [(String, [String])] = []
        for (section, line) in shellLines() {
            for var words in segments(line) {
                if words.first == "runuser" || words.first == "sudo", let dash = words.firstIndex(of: "--") {
                    words = Array(words[(dash + 1)...])
                } else if words.first == "sudo", words.count > 3, words[1] == "-u" {
                    words = Array(words[3...])
                }
                guard let first = words.first, first == "pushspool" || first == "/usr/local/bin/pushspool" else { continue }
                found.append((section, Array(words.dropFirst())))
            }
        }
        return found
    }

    @Test("every pushspool command line in the README parses as this pushspool's command line")
    func everyReadmeCommandParses() throws {
        let all = Self.invocations()
        // The sections the issue names are there and have commands.
        for section in ["Install", "Deploy on a server", "A first campaign"] {
            #expect(Self.shellLines().contains { $0.section == section }, "README has a \(section) section with commands")
        }
        #expect(all.contains { $0.section == "Deploy on a server" && $0.words.first == "init" })
        #expect(all.count >= 15, "\(all.count) commands found")
        for (section, words) in all {
            guard let command = words.first, !["--help", "-h", "help", "--version"].contains(command) else { continue }
            do {
                _ = try CLI.parse(command: command, Array(words.dropFirst()))
            } catch {
                Issue.record("README, \(section): pushspool \(words.joined(separator: " ")): \(error.description)")
            }
        }
    }

    @Test func theParserOfThisTestReadsShellAsShellDoes() {
        #expect(Self.segments(#"runuser -u pushspool -- pushspool init --config "/etc/a b.json"  # note"#)
                == [["runuser", "-u", "pushspool", "--", "pushspool", "init", "--config", "/etc/a b.json"]])
        #expect(Self.segments("cd /x && /usr/local/bin/pushspool run --once >>/var/log/x 2>&1")
                == [["cd", "/x"], ["/usr/local/bin/pushspool", "run", "--once"], ["2"]])
        #expect(Self.segments(#"pushspool register --handle '{"a": 1}' --tag x"#) == [["pushspool", "register", "--handle", #"{"a": 1}"#, "--tag", "x"]])
    }

    /// The first campaign, extracted from the README (not copied), run in an empty folder with
    /// this build as `pushspool` on the PATH; each command's output must be what the README
    /// shows after it (`…` stands for anything; lines in any order: two deliveries of one job
    /// may be logged either way round).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/jq"))) func firstCampaignRunsAsWritten() throws {
        let section = try #require(Self.readme.range(of: "## A first campaign"))
        let body = Self.readme[section.upperBound...]
        let open = try #require(body.range(of: "```console\n"))
        let close = try #require(body[open.upperBound...].range(of: "```"))
        var steps: [(command: String, expected: [String])] = []
        for line in body[open.upperBound..<close.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            if line.hasPrefix("$ ") { steps.append((String(line.dropFirst(2)), [])) } else { steps[steps.count - 1].expected.append(String(line)) }
        }
        #expect(steps.count >= 7 && steps.first?.command == "pushspool init")
        let dir = TempDir("pushspool-readme")
        let bin = dir.url.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("pushspool").path, withDestinationPath: Paths.binary.path)
        let work = dir.url.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        for (command, expected) in steps {
            let r = try runPushspoolVia("/bin/sh", ["-c", "cd \"$0\" && PATH=\"$1:$PATH\" && \(command)", work.path, bin.path])
            #expect(r.status == 0, "\(command): exit \(r.status): \(r.stderr)")
            var actual = r.stdout.split(separator: "\n").map(String.init)
            for line in expected {
                let pattern = "^" + line.components(separatedBy: "…").map(NSRegularExpression.escapedPattern(for:)).joined(separator: ".*") + "$"
                let regex = try NSRegularExpression(pattern: pattern)
                if let i = actual.firstIndex(where: { regex.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }) {
                    actual.remove(at: i)
                } else {
                    Issue.record("\(command): the README shows \"\(line)\"; the program printed:\n\(r.stdout)")
                }
            }
            #expect(actual.isEmpty, "\(command): printed lines the README does not show: \(actual)")
        }
    }

    /// The shipped units start when a folder they name is missing: writable paths are optional
    /// (`-`) or made by systemd (`StateDirectory=`, `LogsDirectory=`), and the working folder is one of those.
    @Test func unitsStartWithoutTheirFolders() throws {
        for unit in ["pushspool.service", "pushspool-serve.service", "pushspool-host.service"] {
            let text = try String(contentsOf: Paths.packageRoot.appendingPathComponent("examples/systemd/\(unit)"), encoding: .utf8)
            var made: [String] = []
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                if line.hasPrefix("StateDirectory=") { made.append("/var/lib/" + line.dropFirst("StateDirectory=".count)) }
                if line.hasPrefix("LogsDirectory=") { made.append("/var/log/" + line.dropFirst("LogsDirectory=".count)) }
            }
            for line in text.split(separator: "\n") where line.hasPrefix("ReadWritePaths=") {
                for path in line.dropFirst("ReadWritePaths=".count).split(separator: " ") {
                    #expect(path.hasPrefix("-") || made.contains(String(path)), "\(unit): \(path) must exist for the unit to start")
                }
            }
            for line in text.split(separator: "\n") where line.hasPrefix("WorkingDirectory=") {
                #expect(made.contains(String(line.dropFirst("WorkingDirectory=".count))), "\(unit): \(line)")
            }
        }
    }
}
