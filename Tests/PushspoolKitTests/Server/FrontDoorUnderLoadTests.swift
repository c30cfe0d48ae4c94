import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `serve` under greedy clients, as a production front door is tried: one address opening
/// thousands of connections, a flood of wrong passwords at a real bcrypt cost, a credential file
/// deleted while it runs. Two client addresses are two loopback addresses (127.0.0.1, 127.0.0.2).
@Suite(.serialized) struct FrontDoorUnderLoadTests {
    @Test func oneAddressOpeningFiveThousandConnectionsLeavesOthersServed() throws {
        // The test process holds the 5,000 sockets: its descriptor limit raised as far as allowed.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let saved = limit
        limit.rlim_cur = min(limit.rlim_max, 12_000)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        defer { var back = saved; setrlimit(Int32(RLIMIT_NOFILE.rawValue), &back) }
        try #require(limit.rlim_cur >= 5_200, "RLIMIT_NOFILE is capped at \(limit.rlim_max)")

        let f = try SandboxFrontDoor()
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<5_000 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { break }
            sockets.append(fd)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = UInt16(f.serve.port).bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            // The start of a request that never ends.
            _ = send(fd, "G", 1, Int32(MSG_NOSIGNAL))
        }
        #expect(sockets.count == 5_000)
        // Another address: answered at once, several times over.
        let other = try RawHTTPClient(port: f.serve.port, timeout: 5, from: "127.0.0.2")
        for _ in 0..<5 {
            let started = Date()
            let a = try other.request("GET", "/healthz")
            #expect(a.status == 200)
            #expect(Date().timeIntervalSince(started) < 2)
        }
        // The greedy address holds at most http.max_connections_per_address (64) of them.
        var open = 0
        for fd in sockets {
            var b: UInt8 = 0
            let n = recv(fd, &b, 1, Int32(MSG_DONTWAIT))
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { open += 1 }
        }
        #expect(open <= 64 + 16, "\(open) connections of one address still open")
        #expect(f.serve.process.isRunning)
    }

    @Test("a client trickling a request a byte at a time is cut off once the request is late, though never idle")
    func aTricklingClientIsCutOff() throws {
        let f = try SandboxFrontDoor(httpExtra: #", "timeout_seconds": 2"#)
        let c = try RawHTTPClient(port: f.serve.port, timeout: 1)
        let request = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: \(String(repeating: "a", count: 200))\r\n\r\n".utf8)
        let started = Date()
        var cut: Double?
        // A byte every 0.4 s: the library's inactivity timeout (2 s) alone never fires.
        for b in request {
            do { try c.send([b]) } catch { cut = Date().timeIntervalSince(started); break }
            Thread.sleep(forTimeInterval: 0.4)
            if Date().timeIntervalSince(started) > 12 { break }
        }
        let seconds = try #require(cut, "still connected after \(Date().timeIntervalSince(started)) s")
        #expect(seconds < 6, "cut after \(seconds) s")
        // Others are served meanwhile and after.
        #expect(try f.serve.client().request("GET", "/healthz").status == 200)
    }

    @Test func aDeletedTokensFileRevokesEveryTokenAtTheNextRequest() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        #expect(try c.request("GET", "/metrics", headers: [("Authorization", FrontDoorFiles.bearer)]).status == 200)
        try FileManager.default.removeItem(atPath: f.dir.path("tokens.txt"))
        // The file is looked at once a second at most.
        Thread.sleep(forTimeInterval: 1.2)
        let a = try c.request("GET", "/metrics", headers: [("Authorization", FrontDoorFiles.bearer)])
        #expect(a.status == 401, "\(a.text)")
        eventually("the warning in serve's log", { f.serve.log }, until: { $0.contains("does not exist: everyone it named is refused until it is back") })
    }

    /// `right-pass` at bcrypt cost 12 (about 250 ms of CPU a check here).
    static let cost12 = "$2b$12$abcdefghijklmnopqrstuuI4YtICBHwZzmPCPk9qA0.kvS42ImzAa"

    @Test func wrongPasswordsAtBcryptCost12LeaveHealthzFastAndRightLoginsWorking() throws {
        let dir = TempDir("pushspool-bcrypt")
        dir.write("users.htpasswd", "alice:\(Self.cost12)\nbob:\(Self.cost12)\n", mode: 0o600)
        dir.write("tokens.txt", FrontDoorFiles.tokens, mode: 0o600)
        dir.write("pushspool.json", #"{"spool": "spool", \#(FrontDoorFiles.section())}"#)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        let serve = try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url)
        let port = serve.port
        let right = [("Authorization", "Basic " + Data("alice:right-pass".utf8).base64EncodedString())]
        // alice logged in before: her app keeps working from the verified-credential cache.
        let app = try RawHTTPClient(port: port, from: "127.0.0.3")
        #expect(try app.request("POST", "/api/register?handle=h-alice", headers: right).status == 200)

        // 20 wrong passwords a second for 6 s, each from an address of its own (no throttle helps).
        let answers = Mutex<[Int: Int]>([:])
        let flood = DispatchGroup()
        let sent = DispatchSemaphore(value: 0)
        let sender = Thread {
            defer { sent.signal() }
            for i in 0..<120 {
                flood.enter()
                Thread.detachNewThread {
                    defer { flood.leave() }
                    let status = (try? RawHTTPClient(port: port, timeout: 20, from: "127.0.1.\(1 + i % 250)")
                        .request("POST", "/api/register?handle=h-x",
                                 headers: [("Authorization", "Basic " + Data("alice:guess-\(i)".utf8).base64EncodedString())]).status) ?? -1
                    answers.withLock { $0[status, default: 0] += 1 }
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        sender.start()
        Thread.sleep(forTimeInterval: 0.5)

        let probe = try RawHTTPClient(port: port, from: "127.0.0.2")
        var latencies: [Double] = []
        var appStatuses: [Int] = []
        var bob: Int?
        var bobTries = 0
        let bobAuth = [("Authorization", "Basic " + Data("bob:right-pass".utf8).base64EncodedString())]
        let end = Date().addingTimeInterval(5)
        var n = 0
        while Date() < end {
            let t = DispatchTime.now().uptimeNanoseconds
            #expect(try probe.request("GET", "/healthz").status == 200)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6)
            n += 1
            if n % 10 == 0 { appStatuses.append(try app.request("POST", "/api/register?handle=h-alice", headers: right).status) }
            // bob logs in for the first time meanwhile: a 503 says try again, never a stall or a 401.
            if n % 5 == 0, bob != 200, bobTries < 40 {
                bobTries += 1
                bob = try RawHTTPClient(port: port, timeout: 20, from: "127.0.0.4").request("POST", "/api/register?handle=h-bob", headers: bobAuth).status
                #expect(bob == 200 || bob == 503, "bob: \(bob ?? 0)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        sent.wait()   // every guess started (the loop above may end first)
        flood.wait()
        latencies.sort()
        let p99 = latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))]
        let counts = answers.withLock { $0 }
        // A guard against /healthz waiting behind the password checks (a flood of bcrypt
        // verifications queued ahead of it costs far more), not a speed claim: 20 ms was missed
        // by 1.3 ms on a loaded 2-core machine with nothing blocked.
        #expect(p99 <= 50, "healthz p99 \(p99) ms over \(latencies.count) requests; wrong-password answers \(counts)")
        #expect(appStatuses.allSatisfy { $0 == 200 } && !appStatuses.isEmpty, "\(appStatuses)")
        #expect(bob == 200, "bob's first login after \(bobTries) tries: \(bob ?? 0)")
        // Every guess was answered: a refusal after a real check (401) or at once when the pool was full (503).
        #expect(counts.keys.allSatisfy { $0 == 401 || $0 == 503 }, "\(counts)")
        #expect((counts[401] ?? 0) > 0 && counts.values.reduce(0, +) == 120, "\(counts)")
        #expect(serve.process.isRunning)
    }
}
