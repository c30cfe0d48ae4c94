import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `http.request_timeout_seconds`, through the real binary: a request stuck on a slow dependency
/// (here the SQLite registry, locked by another process) gets `503` with `Retry-After` at its
/// deadline, and a request still waiting for its turn by then is never applied later.
@Suite(.serialized) struct RequestDeadlineTests {
    @Test func aRequestPastItsDeadlineGets503AndWaitingWorkIsDropped() throws {
        let s = try ServeLifecycleTests.Spool(httpExtra: #", "request_timeout_seconds": 1"#)
        let serve = try s.serve()
        let port = serve.port
        // Someone else holds the registry's write lock for 4 s (the registry waits up to 30 s).
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        locker.arguments = ["python3", "-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(4)
            c.execute("COMMIT")
            """, s.dir.path("spool/registry.sqlite")]
        let out = Pipe()
        locker.standardOutput = out
        try locker.run()
        _ = readSome(out.fileHandleForReading.fileDescriptor)   // "locked"

        let answers = ServeLifecycleTests.concurrently(2) { i -> (Int, String?, Double) in
            // The second one starts a little later: it waits in the lane behind the first.
            if i == 1 { usleep(100_000) }
            guard let c = try? RawHTTPClient(port: port, timeout: 20) else { return (0, nil, 0) }
            var answer: RawHTTPClient.Answer?
            let ms = ServeLifecycleTests.timed {
                answer = try? c.request("PUT", "/v1/devices/late-\(i)", headers: ServeLifecycleTests.auth,
                                        body: #"{"platform": "fcm", "handle": "late-token-\#(i)", "tags": []}"#)
            }
            return (answer?.status ?? 0, answer?.header("Retry-After"), ms)
        }
        for (i, (status, retryAfter, ms)) in answers.enumerated() {
            #expect(status == 503 && retryAfter != nil, "late-\(i): \(status)")
            #expect(ms < 3000, "late-\(i) answered after \(ms) ms (deadline 1 s)")
        }
        locker.waitUntilExit()
        usleep(500_000)
        // The second request was answered 503 before its turn came: it was not applied afterwards.
        #expect(try !s.deviceIDs().contains("late-1"))
        #expect(ServeLifecycleTests.stop(serve, with: SIGTERM).status == 0)
    }
}
