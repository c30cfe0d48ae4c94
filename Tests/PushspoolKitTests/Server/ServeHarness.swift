import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The front door's credentials for tests: three app users (bcrypt hashes made with
/// `htpasswd -nbB -C 5`) and one service token, written mode 0600 as `config --check` wants.
enum FrontDoorFiles {
    static let users = """
        alice:$2y$05$cc0KuBa52pHdqPUyp9Vw9.pL85fwBYfWSzo75MjmHquwsMWW3IUFq
        bob:$2y$05$638Dea777r.YSrEUHQamVu93ccnpVKn.rLSoKFSxrXrp6HYgF97pu
        carol:$2y$05$df7Ogkcwh04d2mJ9cE6voeLqkwEDKMH0p.j4yzmsBUROzlC.Fqse6

        """
    static let passwords = ["alice": "s3cret", "bob": "hunter2", "carol": "pa:ss w0rd"]
    static let token = "svc-token-1"
    /// `printf '%s' svc-token-1 | sha256sum`
    static let tokens = "ci 19b477a2cd0440be9845855f042d57e31e745cdc754f8bc29aa3daec3ef4b290\n"

    static func write(into dir: TempDir) {
        dir.write("users.htpasswd", users, mode: 0o600)
        dir.write("tokens.txt", tokens, mode: 0o600)
        // The dashboard's operator `olivia` (password `s3cret`): used once `operators_file` names it.
        dir.write("operators.htpasswd", operators, mode: 0o600)
    }

    static let operators = "olivia:$2y$05$cc0KuBa52pHdqPUyp9Vw9.pL85fwBYfWSzo75MjmHquwsMWW3IUFq\n"

    /// The `http` section: port 0 (the kernel picks; the harness reads it off the log).
    static func section(_ extra: String = "") -> String {
        #""http": {"listen": "127.0.0.1:0", "users_file": "users.htpasswd", "tokens_file": "tokens.txt", "client_tag_prefixes": ["follows_"]\#(extra)}"#
    }

    static func basic(_ user: String, _ password: String? = nil) -> String {
        "Basic " + Data("\(user):\(password ?? passwords[user] ?? "")".utf8).base64EncodedString()
    }

    static let bearer = "Bearer \(token)"
}

/// `pushspool serve` running as its own process: started with `--config`, its port read off its
/// first log line, its stderr (the access log) collected, stopped with SIGTERM.
final class ServeProcess {
    let process: Process
    let port: Int
    private let collected = LockedText()

    init(config: String, cwd: URL, env: [String: String] = [:], extraArgs: [String] = []) throws {
        let err = Pipe()
        process = try startPushspool(["serve", "--config", config] + extraArgs, cwd: cwd, env: env, stderr: err)
        let handle = err.fileHandleForReading
        var port: Int?
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while port == nil, Date() < deadline {
            let chunk = readSome(handle.fileDescriptor)
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let r = text.range(of: #"serving https?://[^ ]+:([0-9]+)"#, options: .regularExpression) {
                port = Int(text[r].split(separator: ":").last ?? "")
            }
        }
        collected.append(text)
        guard let port else {
            process.terminate()
            throw FakeServer.FakeError(message: "serve did not start: \(text)")
        }
        self.port = port
        // Drained for as long as it runs: an undrained pipe would stall its access log.
        let fd = handle.fileDescriptor
        Thread.detachNewThread { [collected] in
            while true {
                let chunk = readSome(fd)
                if chunk.isEmpty { return }
                collected.append(String(decoding: chunk, as: UTF8.self))
            }
        }
    }

    /// Everything serve wrote on stderr so far.
    var log: String { collected.value }

    func client() throws -> RawHTTPClient { try RawHTTPClient(port: port) }

    /// SIGTERM, then the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    deinit { stop() }
}

final class LockedText: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func append(_ s: String) { lock.lock(); text += s; lock.unlock() }
    var value: String { lock.lock(); defer { lock.unlock() }; return text }
}

/// One read(2), retried on EINTR; empty at end of file.
func readSome(_ fd: Int32) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { continue }
        return n > 0 ? Array(buffer[0..<n]) : []
    }
}

/// A spool with the sandbox for every platform and the front door configured: for the routes'
/// own behaviour, no provider needed.
final class SandboxFrontDoor {
    let dir = TempDir("pushspool-serve")
    let serve: ServeProcess

    init(httpExtra: String = "", top: String = "") throws {
        FrontDoorFiles.write(into: dir)
        dir.write("pushspool.json", #"{"spool": "spool", \#(top)\#(FrontDoorFiles.section(httpExtra))}"#)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        serve = try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url)
    }

    func cli(_ args: [String]) throws -> RunResult {
        try runPushspool(args + ["--config", dir.path("pushspool.json")], cwd: dir.url)
    }

    /// The sandbox's outbox lines for one platform.
    func outbox(_ platform: String) -> [[String: Any]] { dir.jsonLines("spool/outbox/\(platform).jsonl") }
}
