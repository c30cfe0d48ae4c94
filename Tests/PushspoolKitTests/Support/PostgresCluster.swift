import Foundation
import Synchronization
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for tests: `initdb` in a temporary folder, the server listening
/// on a Unix socket in that folder only (no TCP port), owned by an unprivileged user when the
/// tests run as root (PostgreSQL refuses to run as root). The server runs under a small shell that
/// stops it (fast shutdown) and deletes the folder when its stdin closes, so it never outlives the
/// test process, even one that crashes.
///
/// Tests that need PostgreSQL use `PostgresCluster.shared` and are skipped, with the reason from
/// `unavailableReason`, when no `initdb` is found (`PUSHSPOOL_PG_BIN` may name its folder; set
/// empty, it turns them off).
final class PostgresCluster: @unchecked Sendable {
    let dir: URL
    let port = 5432
    private let owner: String?
    private let process = Mutex<(Process, Pipe)?>(nil)
    private let databases = Atomic<Int>(0)

    /// The folder holding `initdb`, `postgres`…: `$PUSHSPOOL_PG_BIN`, else the newest
    /// `/usr/lib/postgresql/*/bin` (Debian), else the first `initdb` on PATH.
    static let binDirectory: String? = {
        let fm = FileManager.default
        if let env = ProcessInfo.processInfo.environment["PUSHSPOOL_PG_BIN"] {
            // Set: that folder or nothing (an empty value turns the PostgreSQL tests off).
            return fm.isExecutableFile(atPath: env + "/initdb") ? env : nil
        }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted()
        for v in versions.reversed() where fm.isExecutableFile(atPath: "/usr/lib/postgresql/\(v)/bin/initdb") {
            return "/usr/lib/postgresql/\(v)/bin"
        }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        where fm.isExecutableFile(atPath: "\(dir)/initdb") && fm.isExecutableFile(atPath: "\(dir)/postgres") {
            return String(dir)
        }
        return nil
    }()

    /// The user the server runs as when we are root: `postgres` (made by Debian's package), else
    /// `pushspool-test` (made by `.ci/run`), else `nobody`.
    static let unprivilegedUser: String? = {
        guard getuid() == 0 else { return nil }
        for name in ["postgres", "pushspool-test", "nobody"] where getpwnam(name) != nil { return name }
        return nil
    }()

    static let shared: Result<PostgresCluster, ClusterError> = {
        guard binDirectory != nil else {
            return .failure(ClusterError(message: "no PostgreSQL server binaries (initdb) found; install `postgresql` or set PUSHSPOOL_PG_BIN to the folder holding initdb"))
        }
        do {
            let cluster = try PostgresCluster()
            try cluster.start()
            return .success(cluster)
        } catch let error as ClusterError {
            return .failure(error)
        } catch {
            return .failure(ClusterError(message: "\(error)"))
        }
    }()

    /// Why PostgreSQL tests are skipped, or nil when they can run. Cheap (no cluster is started:
    /// suites' traits read it even in runs filtered to other tests); a cluster that then fails to
    /// start skips the tests that needed it, with its own reason (`RegistryFixture`).
    static var unavailableReason: String? {
        if binDirectory == nil {
            return "PostgreSQL tests skipped: no PostgreSQL server binaries (initdb) found; install `postgresql` or set PUSHSPOOL_PG_BIN to the folder holding initdb"
        }
        if getuid() == 0 && unprivilegedUser == nil {
            return "PostgreSQL tests skipped: running as root and no unprivileged user (postgres, pushspool-test, nobody) to run the server as"
        }
        return nil
    }

    static var isAvailable: Bool { unavailableReason == nil }

    struct ClusterError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Creates the folder and runs `initdb` (no fsync: a throwaway cluster).
    init() throws {
        guard let bin = Self.binDirectory else { throw ClusterError(message: "no initdb") }
        var template = Array("/tmp/pushspool-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ClusterError(message: "mkdtemp failed") }
        dir = URL(fileURLWithPath: String(cString: made))
        owner = Self.unprivilegedUser
        if let owner, let pw = getpwnam(owner) {
            guard chown(dir.path, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else {
                throw ClusterError(message: "cannot give \(dir.path) to \(owner)")
            }
        }
        let r = try Self.run(asUser: owner, ["\(bin)/initdb", "-D", dir.path + "/data", "-A", "trust", "-U", "postgres",
                                             "-E", "UTF8", "--locale=C", "--no-sync"])
        guard r.status == 0 else {
            throw ClusterError(message: "initdb failed (\(r.status)): \(r.output.suffix(500))")
        }
    }

    /// The URI of the maintenance database `postgres`.
    var adminURI: String { uri(database: "postgres") }

    func uri(database: String) -> String {
        "postgresql:///\(database)?host=\(dir.path)&port=\(port)&user=postgres"
    }

    /// Starts the server and waits until it accepts connections (30 s at most).
    func start() throws {
        guard let bin = Self.binDirectory else { return }
        let server = "\(bin)/postgres -D \(dir.path)/data -k \(dir.path) -p \(port) -c listen_addresses= "
            + "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 "
            + "-c shared_buffers=128MB -c log_min_messages=fatal"
        // Stops the server when stdin closes (the test process ended or `stop()`); unless
        // `stop()` left a `keep` mark (a restart), the folder goes too.
        let d = dir.path
        let script = "\(server) >\(d)/log 2>&1 & pid=$!; cat >/dev/null; kill -INT $pid; wait $pid; "
            + "if [ -e \(d)/keep ]; then rm -f \(d)/keep; else rm -rf \(d); fi"
        let p = Process()
        let stdin = Pipe()
        if let owner {
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            p.arguments = ["-u", owner, "--", "/bin/sh", "-c", script]
        } else {
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", script]
        }
        p.standardInput = stdin
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process.withLock { $0 = (p, stdin) }
        var connected = false
        var lastError = ""
        _ = pollUntil(timeout: 30, poll: 0.05) {
            do {
                _ = try PostgresConnection(uri: adminURI)
                connected = true
            } catch {
                lastError = "\(error)"
            }
            return connected || !p.isRunning
        }
        guard connected else { throw ClusterError(message: "the server did not start: \(lastError); log: \(log.suffix(500))") }
    }

    /// Stops the server (fast shutdown: connections are cut) and waits for it to exit.
    /// Stops the server (a fast shutdown) and returns once it is down. The server itself is told,
    /// not only the script that started it: the script stops it when its stdin ends, but every
    /// process spawned meanwhile (by tests running in parallel) may hold a copy of that pipe, so
    /// its end can come late — once, a campaign ran to its end against a database the test
    /// believed stopped.
    func stop() {
        guard let (_, stdin) = process.withLock({ v in defer { v = nil }; return v }) else { return }
        _ = FileManager.default.createFile(atPath: dir.appendingPathComponent("keep").path, contents: nil)
        // The server removes its pid file as the last step of a shutdown.
        let pidFile = dir.appendingPathComponent("data/postmaster.pid").path
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
           let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }), kill(pid, SIGINT) == 0 {
            _ = pollUntil(timeout: 60, poll: 0.02) { !FileManager.default.fileExists(atPath: pidFile) }
        }
        try? stdin.fileHandleForWriting.close()   // the script ends (and keeps the folder) whenever its stdin does
    }

    var log: String { (try? String(contentsOf: dir.appendingPathComponent("log"), encoding: .utf8)) ?? "" }

    /// A new, empty database; returns its URI.
    func createDatabase(_ prefix: String = "t") throws -> String {
        let name = "\(prefix)_\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        let admin = try PostgresConnection(uri: adminURI)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(name)")
        return uri(database: name)
    }

    /// Runs a command (as `user` when given) and returns its status and combined output.
    static func run(asUser user: String?, _ argv: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        if let user {
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            p.arguments = ["-u", user, "--"] + argv
        } else {
            p.executableURL = URL(fileURLWithPath: argv[0])
            p.arguments = Array(argv.dropFirst())
        }
        p.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let data = readToEnd(out.fileHandleForReading.fileDescriptor)
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dir)
    }
}
