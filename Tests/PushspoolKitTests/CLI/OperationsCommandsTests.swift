import Foundation
import Testing
@testable import PushspoolKit

/// Issue 46: the Operations article's shell blocks run as written: the deployment's paths
/// (`/etc/pushspool`, `/var/spool/pushspool`, `/var/lib/pushspool`) moved into a temporary folder,
/// `runuser -u pushspool --` dropped (the test is the service user), and the `systemctl` lines not
/// run (there is no service manager here, and nothing runs in the background to stop).
@Suite struct OperationsCommandsTests {
    static let article = "\(DocumentationLinksTests.catalog)/Operations.md"

    /// The ```sh blocks of the article, each with the heading of the section it is in.
    static func blocks() throws -> [(section: String, lines: [String])] {
        var out: [(String, [String])] = [], section = "", block: [String]?
        for line in try DocumentationLinksTests.text(article).components(separatedBy: "\n") {
            if var lines = block {
                if line.hasPrefix("```") { out.append((section, lines)); block = nil } else { lines.append(line); block = lines }
                continue
            }
            if line.hasPrefix("#") { section = line.trimmingCharacters(in: CharacterSet(charactersIn: "# ")) }
            if line == "```sh" { block = [] }
        }
        return out
    }

    /// A line as the test runs it, nil when it is not run.
    static func runnable(_ line: String, root: String) -> String? {
        guard !line.hasPrefix("systemctl ") else { return nil }
        var line = line.replacingOccurrences(of: "runuser -u pushspool -- ", with: "")
        for path in ["/etc/pushspool", "/var/spool/pushspool", "/var/lib/pushspool"] {
            line = line.replacingOccurrences(of: path, with: root + path)
        }
        return line
    }

    @Test func deployUpgradeBackupAndRestoreRunAsWritten() throws {
        let blocks = try Self.blocks()
        for section in ["Deploy", "Upgrade", "SQLite"] {
            #expect(blocks.contains { $0.section == section }, "Operations has commands under \(section)")
        }
        let dir = TempDir("operations")
        let root = dir.url.path
        for folder in ["etc/pushspool", "var/spool", "var/lib/pushspool"] {
            try FileManager.default.createDirectory(atPath: dir.path(folder), withIntermediateDirectories: true)
        }
        dir.write("etc/pushspool/pushspool.json", #"{"spool": "\#(root)/var/spool/pushspool"}"#)
        let config = ["--config", dir.path("etc/pushspool/pushspool.json")]
        try initSpool(config)
        for id in ["a", "b", "c"] {
            #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-\(id)", "--id", id] + config).status == 0)
        }
        let bin = dir.url.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("pushspool").path, withDestinationPath: Paths.binary.path)

        func run(_ block: (section: String, lines: [String])) throws -> RunResult {
            let script = block.lines.compactMap { Self.runnable($0, root: root) }.joined(separator: "\n")
            let r = try runPushspoolVia("/bin/sh", ["-ec", "PATH=\"$0:$PATH\"\n" + script, bin.path])
            #expect(r.status == 0, "\(block.section): \(script)\nexit \(r.status): \(r.stdout)\(r.stderr)")
            return r
        }
        for block in blocks where block.section == "Deploy" || block.section == "Upgrade" {
            _ = try run(block)
        }
        // The backup block, then a device registered after it, then the restore block: the
        // restored registry is the backup's, and the article's own check says how many.
        let sqlite = blocks.filter { $0.section == "SQLite" }
        #expect(sqlite.count == 2, "a backup block and a restore block")
        let backup = try run(try #require(sqlite.first))
        #expect(backup.stdout.contains(": 3 devices, ") && backup.stdout.contains("integrity ok"), "\(backup.stdout)")
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-late", "--id", "late"] + config).status == 0)
        let restore = try run(try #require(sqlite.last))
        #expect(restore.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3", "\(restore.stdout)")
        let devices = try runPushspool(["devices"] + config).stdout
        #expect(!devices.contains("\"late\""), "the device registered after the backup is not in it: \(devices)")
    }
}
