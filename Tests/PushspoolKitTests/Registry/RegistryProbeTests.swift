import Foundation
import PushspoolCore
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
#if canImport(Glibc)
import Glibc
#endif

/// `status` and `/healthz` say when the registry does not answer, through one probe
/// (`RegistryProbe`), within a bound, and without the registry's password.
@Suite(.serialized)
struct RegistryProbeTests {
    /// A TCP port that completes the handshake (the kernel's backlog) and never answers: a
    /// database host that hangs, which libpq alone would wait on for its `connect_timeout`.
    final class SilentPort {
        let fd: Int32
        let port: Int
        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &len) == 0 }
            }
            guard bound else { throw FakeServer.FakeError(message: "cannot listen: \(String(cString: strerror(errno)))") }
            port = Int(UInt16(bigEndian: addr.sin_port))
        }
        deinit { close(fd) }
    }

    static let password = "probe-s3cret-4471"

    @Test func statusSaysTheRegistryDoesNotAnswerWithinHalfASecond() throws {
        let silent = try SilentPort()
        let dir = TempDir("registry-probe")
        _ = try Spool(root: dir.url.appendingPathComponent("spool"))
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "postgresql://pushspool:\#(Self.password)@127.0.0.1:\#(silent.port)/push"}"#)
        let common = ["--config", dir.path("pushspool.json")]
        var started = Date()
        let text = try runPushspool(["status"] + common)
        let textSeconds = Date().timeIntervalSince(started)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("registry: unreachable (no answer within 300 ms)"), "\(text.stdout)")
        started = Date()
        let json = try runPushspool(["status", "--json"] + common)
        let jsonSeconds = Date().timeIntervalSince(started)
        let doc = (try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) as? [String: Any] ?? [:]
        let registry = doc["registry"] as? [String: Any] ?? [:]
        #expect(registry["reachable"] as? Bool == false && registry["error"] as? String == "no answer within 300 ms", "\(json.stdout)")
        for r in [text, json] { #expect(!(r.stdout + r.stderr).contains(Self.password)) }
        print("status with a registry that does not answer: \(String(format: "%.3f", textSeconds)) s (text), \(String(format: "%.3f", jsonSeconds)) s (--json)")
        #expect(textSeconds < 2 && jsonSeconds < 2, "status waited on the registry: \(textSeconds) s, \(jsonSeconds) s")
    }

    @Test func healthzUsesTheSameBoundedProbe() throws {
        let silent = try SilentPort()
        let dir = TempDir("registry-probe-health")
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        var config = Config()
        config.registry = "postgresql://pushspool:\(Self.password)@127.0.0.1:\(silent.port)/push"
        let check = HealthCheck.spoolAndRegistry(spool: spool, registry: RegistryProbe(config: config))
        let started = Date()
        let problem = check()
        let seconds = Date().timeIntervalSince(started)
        #expect(problem == "registry unreachable: no answer within 300 ms", "\(problem ?? "healthy")")
        #expect(seconds < 2, "the health check waited \(seconds) s")
        // A SQLite registry that is there answers.
        config.registry = dir.path("spool/registry.sqlite")
        _ = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        #expect(HealthCheck.spoolAndRegistry(spool: spool, registry: RegistryProbe(config: config))() == nil)
    }

    @Test(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
    func statusSaysWhenPostgreSQLIsDown() throws {
        let cluster = try PostgresCluster()     // a cluster of its own: this test stops it
        try cluster.start()
        let uri = try cluster.createDatabase("probe")
        let dir = TempDir("registry-probe-pg")
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "env:PUSHSPOOL_TEST_REGISTRY"}"#)
        let env = ["PUSHSPOOL_TEST_REGISTRY": uri]
        let common = ["--config", dir.path("pushspool.json")]
        #expect(try runPushspool(["init"] + common, env: env).status == 0)
        var r = try runPushspool(["status", "--json"] + common, env: env)
        #expect(r.stdout.contains(#""registry":{"reachable":true}"#), "\(r.stdout)")
        #expect(try runPushspool(["status"] + common, env: env).stdout.contains("registry: reachable"))

        cluster.stop()
        let started = Date()
        r = try runPushspool(["status"] + common, env: env)
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 0)
        let line = r.stdout.split(separator: "\n").first { $0.contains("registry: unreachable (") }
        #expect(line != nil, "\(r.stdout)")
        r = try runPushspool(["status", "--json"] + common, env: env)
        let doc = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        let registry = doc["registry"] as? [String: Any] ?? [:]
        #expect(registry["reachable"] as? Bool == false && (registry["error"] as? String)?.isEmpty == false, "\(r.stdout)")
        print("status with PostgreSQL down: \(String(format: "%.3f", seconds)) s: \(line ?? "")")
        #expect(seconds < 2)
    }
}
