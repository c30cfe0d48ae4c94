import Testing
@testable import PushspoolKit
@testable import PushspoolCLI

/// Issue 46: the Command line reference has a row for every command of the table `--help` and
/// the parser read, naming every option the command takes, and a row for every exit code; and
/// it names no command or option the table does not have.
@Suite struct CommandLineReferenceTests {
    static let article = "CommandLineReference.md"

    /// The command a row is about: `pushspool <name> …` in its first cell.
    static func command(of row: [String]) -> String? {
        guard let first = ReferenceTables.names(row.first ?? "").first, first.hasPrefix("pushspool ") else { return nil }
        return first.dropFirst("pushspool ".count).split(separator: " ").first.map(String.init)
    }

    /// The `--options` a text names.
    static func options(in text: String) -> Set<String> {
        var found: Set<String> = [], rest = Substring(text)
        while let range = rest.range(of: "--") {
            let name = rest[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            if let first = name.first, first.isLetter { found.insert(String(name)) }
            rest = rest[range.upperBound...]
        }
        return found
    }

    @Test func everyCommandAndOptionHasItsRow() throws {
        let rows = try ReferenceTables(article: Self.article, header: "command").rows
        var byCommand: [String: [[String]]] = [:]
        for row in rows {
            guard let name = Self.command(of: row) else { Issue.record("a row that names no command: \(row)"); continue }
            byCommand[name, default: []].append(row)
        }
        for command in CLI.table {
            guard let own = byCommand[command.name] else { Issue.record("no row for pushspool \(command.name)"); continue }
            let named = Self.options(in: own.joined().joined(separator: " "))
            let missing = command.valued.union(command.repeatable).union(command.switches).subtracting(named).sorted()
            #expect(missing.isEmpty, "pushspool \(command.name): options with no mention in its row: \(missing)")
            let unknown = named.subtracting(command.options).subtracting(["help"]).sorted()
            #expect(unknown.isEmpty, "pushspool \(command.name): its row names options it does not take: \(unknown)")
        }
        let unknown = Set(byCommand.keys).subtracting(CLI.commands.keys).sorted()
        #expect(unknown.isEmpty, "rows for commands pushspool does not have: \(unknown)")
    }

    @Test func everyExitCodeHasItsRowAndTheCommonOptionsAreThere() throws {
        let rows = try ReferenceTables(article: Self.article, header: "exit code").rows
        let documented = rows.compactMap { Int32($0.first ?? "") }
        #expect(documented.sorted() == ExitCode.allCases.map(\.rawValue).sorted(), "exit codes: \(documented)")
        for code in ExitCode.allCases {
            #expect(rows.contains { $0.first == "\(code.rawValue)" && $0.count > 1 && $0[1] == code.meaning }, "\(code.rawValue) means \(code.meaning)")
        }
        let common = try ReferenceTables(article: Self.article, header: "option").firstColumnNames.map { $0.split(separator: " ")[0] }
        #expect(Set(common) == Set(CLI.commonValued.map { "--\($0)" } + ["--help"]), "common options: \(common)")
    }
}
