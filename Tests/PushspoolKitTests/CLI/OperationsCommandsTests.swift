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

    /// The database URI the article's PostgreSQL blocks name.
    static let articleURI = "postgres://pushspool@db.example/pushspool"

    /// A line as the test runs it, nil when it is not run.
    static func runnable(_ line: String, root: String, database: String? = nil) -> String? {
        guard !line.hasPrefix("systemctl ") else { return nil }
        var line = line.replacingOccurrences(of: "runuser -u pushspool -- ", with: "")
        for path in ["/etc/pushspool", "/var/spool/pushspool", "/var/lib/pushspool"] {
            line = line.replacingOccurrences(of: path, with: root + path)
        }
        if let database { line = line.replacingOccurrences(of: articleURI, with: database) }
        return line
    }

    /// A test folder laid out as the deployment, with `pushspool` on a PATH of its own.
    struct Deployment {
        let dir = TempDir("operations")
        var root: String { dir.url.path }
        var config: [String] { ["--config", dir.path("etc/pushspool/pushspool.json")] }
        var bin: URL { dir.url.appendingPathComponent("bin") }

        init(registry: String? = nil) throws {
            for folder in ["etc/pushspool", "var/spool", "var/lib/pushspool", "bin"] {
                try FileManager.default.createDirectory(atPath: dir.path(folder), withIntermediateDirectories: true)
            }
            let registryKey = registry.map { #", "registry": "\#($0)""# } ?? ""
            dir.write("etc/pushspool/pushspool.json", #"{"spool": "\#(dir.url.path)/var/spool/pushspool"\#(registryKey)}"#)
            try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("pushspool").path, withDestinationPath: Paths.binary.path)
            try initSpool(config)
        }

        func register(_ ids: [String]) throws {
            for id in ids {
                let r = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-\(id)", "--id", id] + config)
                #expect(r.status == 0, "\(r.stderr)")
            }
        }

        /// Runs a block as `sh -e` would, `extraPath` first on the PATH.
        func run(_ block: (section: String, lines: [String]), database: String? = nil, extraPath: String = "") throws -> RunResult {
            let script = block.lines.compactMap { OperationsCommandsTests.runnable($0, root: root, database: database) }.joined(separator: "\n")
            let r = try runPushspoolVia("/bin/sh", ["-ec", "PATH=\"$0:$1:$PATH\"\n" + script, bin.path, extraPath])
            #expect(r.status == 0, "\(block.section): \(script)\nexit \(r.status): \(r.stdout)\(r.stderr)")
            return r
        }
    }

    @Test func deployUpgradeBackupAndRestoreRunAsWritten() throws {
        let blocks = try Self.blocks()
        for section in ["Deploy", "Upgrade", "SQLite"] {
            #expect(blocks.contains { $0.section == section }, "Operations has commands under \(section)")
        }
        let deployment = try Deployment()
        try deployment.register(["a", "b", "c"])
        func run(_ block: (section: String, lines: [String])) throws -> RunResult { try deployment.run(block) }
        let config = deployment.config
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

    /// The PostgreSQL blocks: a dump, a device registered after it, the restore over the same
    /// database, and the article's own count.
    @Test(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
    func postgresBackupAndRestoreRunAsWritten() throws {
        let blocks = try Self.blocks().filter { $0.section == "PostgreSQL" }
        #expect(blocks.count == 2, "a dump block and a restore block")
        let database = try RegistryFixture.postgresDatabase()
        let deployment = try Deployment(registry: database)
        try deployment.register(["a", "b", "c"])
        // The folder the SQLite section makes.
        try FileManager.default.createDirectory(atPath: deployment.dir.path("var/lib/pushspool/backups"), withIntermediateDirectories: true)
        let tools = PostgresCluster.binDirectory ?? ""
        _ = try deployment.run(try #require(blocks.first), database: database, extraPath: tools)
        #expect(FileManager.default.fileExists(atPath: deployment.dir.path("var/lib/pushspool/backups/registry.dump")))
        try deployment.register(["late"])
        let restore = try deployment.run(try #require(blocks.last), database: database, extraPath: tools)
        let lines = restore.stdout.split(separator: "\n").map(String.init)
        #expect(lines.last == "3", "\(restore.stdout)\(restore.stderr)")
        #expect(lines.contains { $0.contains("nothing to migrate") }, "\(restore.stdout)")
    }
}
