import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// nginx in a folder of its own on a free loopback port: one worker, no access log unless the
/// caller's server block has one, started for one run and stopped after it.
struct Nginx {
    let process: Process
    let port: Int
    let dir: URL

    /// The installed binary, or a bench error naming the package.
    static func binary() throws -> String {
        guard let path = which("nginx") ?? ["/usr/sbin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchError(description: "nginx is not installed (apt-get install nginx-light)")
        }
        return path
    }

    /// `server` is the body of the `server {}` block (its `listen` is added: `listen` takes
    /// `listenOptions`, e.g. `ssl http2`); `modules` are `load_module` paths; `http` goes into the
    /// `http {}` block before the server.
    init(binary: String, dir: URL, listenOptions: String = "", modules: [String] = [], http: String = "",
         server: String = #"location / { return 200 "ok\n"; }"#) throws {
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("logs"), withIntermediateDirectories: true)
        port = try freePort()
        let d = dir.path
        let conf = """
            \(modules.map { "load_module \($0);" }.joined(separator: "\n"))
            worker_processes 1;
            daemon off;
            pid \(d)/nginx.pid;
            error_log \(d)/logs/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                keepalive_requests 100000000;
                keepalive_timeout 600s;
                client_body_temp_path \(d)/body;
                proxy_temp_path \(d)/proxy;
                fastcgi_temp_path \(d)/fastcgi;
                uwsgi_temp_path \(d)/uwsgi;
                scgi_temp_path \(d)/scgi;
                \(http)
                server {
                    listen 127.0.0.1:\(port) \(listenOptions);
                    \(server)
                }
            }
            """
        try conf.write(to: dir.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", d, "-c", dir.appendingPathComponent("nginx.conf").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.dir = dir
        for _ in 0..<100 {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("nginx.pid").path) { break }
            usleep(20_000)
        }
        usleep(100_000)
        guard process.isRunning else {
            let log = (try? String(contentsOf: dir.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
            throw BenchError(description: "nginx did not start: \(log.suffix(500))")
        }
    }

    /// The worker's pid (the master's only child).
    func workerPID() -> pid_t {
        let children = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/task/\(process.processIdentifier)/children", encoding: .utf8)) ?? ""
        return pid_t(children.split(separator: " ").first ?? "") ?? process.processIdentifier
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// A free loopback port: bind 0, read it, let it go (the server binds it next).
func freePort() throws -> Int {
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(probe) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, len) } }
    guard bound == 0 else { throw BenchError(description: "bind: \(String(cString: strerror(errno)))") }
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// CPU seconds a process has used so far (user + system, from /proc).
func processCPUSeconds(_ pid: pid_t) -> Double {
    #if os(Linux)
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
    return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    #else
    return 0
    #endif
}
