import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The job and device API for services, `/healthz` and `/metrics`, through the real binary on the
/// sandbox: durability before the answer, every problem at once, one job per id, steering, the
/// registry, and what an operator's monitoring reads.
@Suite(.serialized) struct JobAPITests {
    static let auth = [("Authorization", FrontDoorFiles.bearer)]

    @Test func aJobIsDurableBeforeItsAnswerAndNeverQueuedTwice() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        _ = try f.cli(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "username:alice", "--id", "a1"])
        let job = #"{"id": "spring-1", "to_tag": "username:alice", "pns": ["fcm"], "message": "sale"}"#
        var a = try c.request("POST", "/v1/jobs", headers: Self.auth, body: job)
        #expect(a.status == 202, "\(a.text)")
        #expect(a.json as? [String: String] == ["id": "spring-1", "status_url": "/v1/jobs/spring-1"])
        // On disk as sent (plus its final newline) when the answer came; nothing left in tmp/.
        #expect(f.dir.read("spool/incoming/spring-1.json") == job + "\n")
        #expect(f.dir.list("spool/tmp").isEmpty)
        // The same id again: that job's status, nothing queued.
        a = try c.request("POST", "/v1/jobs", headers: Self.auth, body: job)
        #expect(a.status == 200 && (a.json as? [String: Any])?["state"] as? String == "waiting", "\(a.text)")
        #expect(f.dir.list("spool/incoming") == ["spring-1.json"])
        // A job without an id gets one.
        a = try c.request("POST", "/v1/jobs", headers: Self.auth, body: #"{"broadcast": true, "pns": "fcm", "message": "all"}"#)
        let generated = try #require((a.json as? [String: String])?["id"])
        #expect(a.status == 202 && f.dir.list("spool/incoming").contains("\(generated).json"))

        #expect(try f.cli(["run", "--once"]).status == 0)
        a = try c.request("GET", "/v1/jobs/spring-1", headers: Self.auth)
        let status = try #require(a.json as? [String: Any])
        #expect(a.status == 200 && status["state"] as? String == "done" && status["delivered"] as? Int == 1, "\(a.text)")
        a = try c.request("GET", "/v1/jobs/spring-1/results", headers: Self.auth)
        #expect(a.status == 200 && a.header("Content-Type") == "application/x-ndjson")
        #expect(a.text == f.dir.read("spool/results/spring-1.jsonl"))
        // Posting it once more after it ended still sends nothing.
        a = try c.request("POST", "/v1/jobs", headers: Self.auth, body: job)
        #expect(a.status == 200 && (a.json as? [String: Any])?["state"] as? String == "done")
        #expect(f.dir.list("spool/incoming").isEmpty)
        #expect(try c.request("GET", "/v1/jobs/nope", headers: Self.auth).status == 404)
        #expect(try c.request("GET", "/v1/jobs/nope/results", headers: Self.auth).status == 404)
        #expect(try c.request("GET", "/v1/jobs/..", headers: Self.auth).status == 400)
    }

    @Test func everyProblemOfAJobComesBackAtOnce() throws {
        let f = try SandboxFrontDoor()
        let a = try f.serve.client().request("POST", "/v1/jobs", headers: Self.auth,
                                             body: #"{"to_tg": "username:x", "pns": ["apnz"], "message": 5}"#)
        #expect(a.status == 400)
        let doc = try #require(a.json as? [String: Any])
        let fields = (doc["problems"] as? [[String: String]])?.compactMap { $0["field"] } ?? []
        #expect(fields.contains("to_tg") && fields.contains("pns[0]") && fields.contains("message"), "\(a.text)")
        #expect((doc["error"] as? String)?.isEmpty == false)
        for body in ["", "[1]", "{\"id\": \"../x\", \"broadcast\": true, \"pns\": \"fcm\", \"message\": \"m\"}"] {
            let r = try f.serve.client().request("POST", "/v1/jobs", headers: Self.auth, body: body)
            #expect(r.status == 400 && (r.json as? [String: Any])?["problems"] != nil, "\(body): \(r.text)")
        }
        #expect(f.dir.list("spool/incoming").isEmpty && f.dir.list("spool/tmp").isEmpty)
    }

    @Test func jobsAreSteeredAsOnTheCommandLine() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let later = #"{"id": "later", "broadcast": true, "pns": ["apns"], "message": "m", "not_before": "2099-01-01T00:00:00Z"}"#
        #expect(try c.request("POST", "/v1/jobs", headers: Self.auth, body: later).status == 202)
        #expect((try c.request("GET", "/v1/jobs/later", headers: Self.auth).json as? [String: Any])?["state"] as? String == "scheduled")
        var a = try c.request("POST", "/v1/jobs/later/pause", headers: Self.auth)
        #expect(a.status == 202 && (a.json as? [String: Any])?["already"] as? Bool == false, "\(a.text)")
        #expect((a.json as? [String: Any])?["state"] as? String == "paused", "\(a.text)")
        #expect((try c.request("POST", "/v1/jobs/later/pause", headers: Self.auth).json as? [String: Any])?["already"] as? Bool == true)
        #expect((try c.request("GET", "/v1/jobs/later", headers: Self.auth).json as? [String: Any])?["state"] as? String == "paused")
        a = try c.request("POST", "/v1/jobs/later/resume", headers: Self.auth)
        #expect(a.status == 202 && (a.json as? [String: Any])?["resumed"] as? String == "no_dispatcher", "\(a.text)")
        #expect((a.json as? [String: Any])?["state"] as? String == "waiting", "\(a.text)")
        // Resuming what is not paused is a no-op, as `mkdir -p` is for a folder that exists.
        a = try c.request("POST", "/v1/jobs/later/resume", headers: Self.auth)
        #expect(a.status == 202 && (a.json as? [String: Any])?["resumed"] as? String == "not_paused", "\(a.text)")
        #expect(try c.request("POST", "/v1/jobs/later/cancel", headers: Self.auth).status == 202)
        #expect(try c.request("POST", "/v1/jobs/nope/cancel", headers: Self.auth).status == 404)
        #expect(try f.cli(["run", "--once"]).status == 0)
        a = try c.request("GET", "/v1/jobs/later", headers: Self.auth)
        #expect((a.json as? [String: Any])?["state"] as? String == "cancelled", "\(a.text)")
        #expect(try c.request("POST", "/v1/jobs/later/cancel", headers: Self.auth).status == 409)
        #expect(try c.request("DELETE", "/v1/jobs/later", headers: Self.auth).status == 405)
    }

    @Test func servicesManageDevices() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        var a = try c.request("PUT", "/v1/devices/kiosk-7", headers: Self.auth,
                              body: #"{"platform": "wns", "handle": "https://db5.notify.windows.com/?token=abc", "tags": ["store:12", "lobby"], "lang": "pt-br"}"#)
        #expect(a.status == 200, "\(a.text)")
        #expect((a.json as? [String: Any])?["lang"] as? String == "pt-BR")
        a = try c.request("PUT", "/v1/devices/p2", headers: Self.auth, body: #"{"platform": "apns", "handle": "zz", "tags": []}"#)
        #expect(a.status == 400 && (a.json as? [String: String])?["error"]?.hasPrefix("handle") == true, "\(a.text)")
        a = try c.request("PUT", "/v1/devices/p2", headers: Self.auth, body: #"{"platform": "apns", "handel": "zz"}"#)
        #expect(a.status == 400 && a.text.contains("handel"))
        a = try c.request("GET", "/v1/devices?tags=store:12%20%26%26%20lobby", headers: Self.auth)
        let lines = a.text.split(separator: "\n")
        #expect(a.status == 200 && lines.count == 1 && lines[0].contains(#""id":"kiosk-7""#) && !a.text.contains("token=abc"), "\(a.text)")
        #expect((try c.request("GET", "/v1/devices?count=1&platform=wns", headers: Self.auth).json as? [String: Int]) == ["count": 1])
        #expect(try c.request("GET", "/v1/devices?tags=(((", headers: Self.auth).status == 400)
        #expect(try c.request("DELETE", "/v1/devices/kiosk-7", headers: Self.auth).status == 200)
        #expect(try c.request("DELETE", "/v1/devices/kiosk-7", headers: Self.auth).status == 404)
        #expect(try c.request("PUT", "/v1/devices/..", headers: Self.auth, body: #"{"platform": "fcm", "handle": "t"}"#).status == 400)
    }

    @Test func aLongDeviceListingIsStreamed() throws {
        let f = try SandboxFrontDoor()
        let lines = (0..<20_000).map { #"{"id": "d\#($0)", "platform": "fcm", "handle": "tok-\#($0)", "tags": ["all"]}"# }
        f.dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        #expect(try f.cli(["import", f.dir.path("devices.jsonl")]).status == 0)
        let a = try f.serve.client().request("GET", "/v1/devices?tags=all", headers: Self.auth)
        #expect(a.status == 200 && a.header("Transfer-Encoding") == "chunked")
        #expect(a.text.split(separator: "\n").count == 20_000)
    }

    @Test func healthAndMetricsForMonitoring() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        var a = try c.request("GET", "/healthz")
        #expect(a.status == 200 && a.text == "ok\n")
        #expect(try c.request("GET", "/metrics").status == 401)
        _ = try c.request("GET", "/nowhere", headers: Self.auth)
        a = try c.request("GET", "/metrics", headers: Self.auth)
        #expect(a.status == 200)
        let metrics = try Exposition(a.text)
        #expect(metrics.value("pushspool_http_requests_total", ["route": "GET /healthz", "code": "200"]) == 1)
        #expect(metrics.value("pushspool_http_requests_total", ["route": "GET /metrics", "code": "401"]) == 1)
        #expect(metrics.value("pushspool_http_requests_total", ["route": "unknown", "code": "404"]) == 1)
        #expect(metrics.types["pushspool_http_request_duration_seconds"] == "histogram")
        #expect(metrics.value("pushspool_queue_jobs", ["folder": "incoming"]) == 0)
        // A spool that cannot take jobs is unhealthy within the check's second, and says why.
        try FileManager.default.removeItem(atPath: f.dir.path("spool/tmp"))
        let u = try eventually("/healthz to say 503", timeout: 30, poll: 0.1, { try c.request("GET", "/healthz") }, until: { $0.status == 503 })
        #expect((u.json as? [String: String])?["error"]?.hasPrefix("spool not writable: tmp/") == true, "\(u.text)")
        // …and a job that cannot be made durable is refused with Retry-After, leaving nothing behind.
        a = try c.request("POST", "/v1/jobs", headers: Self.auth, body: #"{"id": "x", "broadcast": true, "pns": "fcm", "message": "m"}"#)
        #expect(a.status == 503 && a.header("Retry-After") != nil, "\(a.text)")
        #expect(f.dir.list("spool/incoming").isEmpty)
    }

    /// What the kernel was asked, in order, for one `POST /v1/jobs`: the file written and fsynced
    /// in tmp/, renamed into incoming/ without replacing anything, incoming/ fsynced — and only
    /// then the 202 sent.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")))
    func theAnswerIsSentOnlyAfterTheJobIsOnDisk() throws {
        let dir = TempDir("pushspool-strace")
        FrontDoorFiles.write(into: dir)
        dir.write("pushspool.json", #"{"spool": "spool", \#(FrontDoorFiles.section())}"#)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        let trace = dir.path("trace.txt")
        let err = Pipe()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        p.arguments = ["-f", "-y", "-o", trace, "-e", "trace=openat,fsync,fdatasync,renameat2,rename,sendmsg,sendto,writev",
                       Paths.binary.path, "serve", "--config", dir.path("pushspool.json")]
        p.currentDirectoryURL = dir.url
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { p.terminate(); p.waitUntilExit() } }
        var text = "", port: Int?
        while port == nil {
            let chunk = readSome(err.fileHandleForReading.fileDescriptor)
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let r = text.range(of: #"serving http://[^ ]+:([0-9]+)"#, options: .regularExpression) { port = Int(text[r].split(separator: ":").last ?? "") }
        }
        let a = try RawHTTPClient(port: try #require(port, Comment(rawValue: text))).request("POST", "/v1/jobs", headers: Self.auth,
                                                                          body: #"{"id": "traced", "broadcast": true, "pns": "fcm", "message": "m"}"#)
        #expect(a.status == 202)
        // Stop serve itself (the trace's first pid), and strace ends with it: a signal to strace
        // would only detach it.
        let servePID = Int32((dir.read("trace.txt") ?? "").prefix { $0 != " " }) ?? 0
        if servePID > 0 { kill(servePID, SIGTERM) }
        p.waitUntilExit()
        let lines = (dir.read("trace.txt") ?? "").split(separator: "\n").map(String.init)
        func first(_ what: String, after: Int = -1) -> Int? {
            lines.indices.first { $0 > after && lines[$0].range(of: what, options: .regularExpression) != nil }
        }
        let fileSync = first(#"fsync\([0-9]+</[^>]*/spool/tmp/\.traced\.json\.[^>]*> *\) = 0"#)
        let rename = first(#"renameat2\(.*/spool/tmp/\.traced\.json.*/spool/incoming/traced\.json", RENAME_NOREPLACE\) = 0"#, after: fileSync ?? -1)
        let folderSync = first(#"fsync\([0-9]+</[^>]*/spool/incoming> *\) = 0"#, after: rename ?? -1)
        let answer = first("HTTP/1.1 202", after: -1)
        #expect(fileSync != nil && rename != nil && folderSync != nil && answer != nil,
                "missing steps in the trace:\n\(lines.filter { $0.contains("traced") || $0.contains("HTTP/1.1") }.joined(separator: "\n"))")
        if let folderSync, let answer { #expect(folderSync < answer, "the 202 went out before incoming/ was fsynced") }
    }
}
