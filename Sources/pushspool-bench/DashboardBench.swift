import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The dashboard (DocC "Dashboard"), each figure beside its peer in the same run:
/// - a sandbox broadcast to `--devices` (default 1,000,000; APNs, FCM and WNS) by `run --once` on
///   a spool `serve` serves, while 100 operators' sessions (each logged in through the login
///   form, each with its own cookie) poll that campaign's page as the page does (`GET
///   /ui/api/jobs/{id}` every 1.5 s, the sessions spread over the interval), against the same
///   broadcast with `serve` idle; odd rounds measure the polled one first, the median of the
///   rounds' ratios;
/// - the campaign list over a spool of `--jobs` jobs (default 100,000: done with their result
///   logs, some failed, some queued): the first listing (every job file read once), then pages
///   of the list, text searches and state filters, each timed over many requests (p50, p99);
///   then `serve` started again, its first page and first ended-state filter from the list the
///   first one saved;
/// - each `serve`'s peak RSS (`VmHWM`) over all of it.
enum DashboardBench {
    /// `pushspool-bench dashboard`.
    static func printRows(devices: Int, jobs: Int, runs: Int) throws {
        guard let node = which("node") else { throw BenchError(description: "node is not installed") }
        let dir = try BenchPaths.scratch("pushspool-bench-dashboard")
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("operators.js")
        try operatorsScript.write(to: script, atomically: true, encoding: .utf8)
        try broadcastRows(devices: devices, runs: runs, dir: dir.appendingPathComponent("broadcast"), node: node, script: script.path)
        try listRows(jobs: jobs, dir: dir.appendingPathComponent("list"), node: node, script: script.path)
    }

    // MARK: The broadcast, polled and not

    static func broadcastRows(devices: Int, runs: Int, dir: URL, node: String, script: String) throws {
        let binary = try BenchPaths.releaseBinary()
        let cfg = try configure(dir: dir)
        let spool = dir.appendingPathComponent("spool").path
        FileHandle.standardError.write(Data("dashboard: importing \(devices) devices…\n".utf8))
        let file = dir.appendingPathComponent("devices.jsonl")
        try BenchDevices(count: devices, langEvery: Int.max).write(.jsonl, to: file)
        let imported = try measure(binary, ["import", "--config", cfg, file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        try? FileManager.default.removeItem(at: file)
        let serve = try ServeRound.Serve(dir: dir, config: cfg)
        defer { _ = serve.stop() }
        let operators = try Operators(node: node, script: script, port: serve.port, sessions: 100)
        defer { operators.stop() }
        // The job queued, the sessions (if any) polling its page, then `run --once` measured.
        var serveCPU: [Double] = []
        func broadcast(_ id: String, polled: Bool) throws -> (Measured, Operators.Polls?) {
            // Named after its id, as `submit` and `serve` name job files: its page finds it while it waits.
            try writeFile(spool + "/tmp/\(id).json", #"{"id": "\#(id)", "broadcast": true, "pns": ["apns", "fcm", "wns"], "message": "hello"}"#)
            guard rename(spool + "/tmp/\(id).json", spool + "/incoming/\(id).json") == 0 else { throw BenchError(description: "cannot queue \(id)") }
            if polled { try operators.poll(id) }
            let cpu = processCPUSeconds(serve.pid)
            let sent = try measure(binary, ["run", "--once", "--config", cfg])
            if polled { serveCPU.append(processCPUSeconds(serve.pid) - cpu) }
            let polls = polled ? try operators.stopPolling() : nil
            guard sent.status == 0, sent.stdout.contains("job \(id): done — delivered \(devices), failed 0, unregistered 0, retries") else {
                throw BenchError(description: "broadcast \(id) failed (\(sent.status)): \(sent.stdout.suffix(300)) \(sent.stderr.suffix(300))")
            }
            return (sent, polls)
        }
        // One unmeasured broadcast first: both measured runs find the registry's pages warm.
        _ = try broadcast("warm", polled: false)
        var polled: [Measured] = [], idle: [Measured] = [], polls: [Operators.Polls] = []
        for round in 0..<runs {
            FileHandle.standardError.write(Data("dashboard: broadcast round \(round + 1)/\(runs)…\n".utf8))
            func withPolling() throws {
                let (sent, seen) = try broadcast("polled-\(round)", polled: true)
                polled.append(sent)
                polls.append(seen!)
            }
            if round % 2 == 1 { try withPolling() }
            idle.append(try broadcast("idle-\(round)", polled: false).0)
            if round % 2 == 0 { try withPolling() }
        }
        let peak = ReceiptsServe.highWaterMark(pid: serve.pid)
        func secs(_ x: Double) -> String { String(format: "%.2f s", x) }
        let ratios = zip(polled, idle).map { $0.seconds / $1.seconds }
        let ratio = median(ratios)
        row(["sandbox broadcast, \(devices) devices (APNs, FCM, WNS), run --once, 100 dashboard sessions polling its page every 1.5 s",
             secs(median(polled.map(\.seconds))), "serve idle " + secs(median(idle.map(\.seconds))), String(format: "%.3f×", ratio),
             "≤ 1.05×", ratio <= 1.05 ? "yes" : "no"])
        row(["same, each round's ratio (polled / idle)", ratios.map { String(format: "%.3f×", $0) }.joined(separator: ", "), "", "", "", ""])
        let cpu = median(zip(polled, idle).map { $0.cpuSeconds / $1.cpuSeconds })
        row(["same broadcast, run's CPU", secs(median(polled.map(\.cpuSeconds))), "serve idle " + secs(median(idle.map(\.cpuSeconds))),
             String(format: "%.3f×", cpu), "", ""])
        row(["serve's CPU meanwhile (answering the polls)", secs(median(serveCPU)), "", "", "", ""])
        let answered = polls.reduce(0) { $0 + $1.answered }, failed = polls.reduce(0) { $0 + $1.failed }
        row(["the sessions' polls meanwhile: answered (p50 / p99 of the worst round)", "\(answered)",
             String(format: "p50 %.1f ms, p99 %.1f ms", polls.map(\.p50).max() ?? .nan, polls.map(\.p99).max() ?? .nan), "",
             "every poll 200", failed == 0 && answered > 0 ? "yes" : "no (\(failed) not 200: \(polls.map(\.codes).joined(separator: " ")))"])
        defer { fflush(nil) }   // these rows before the long part that follows
        row(["serve's peak RSS (VmHWM), 100 sessions polling a 1M-device campaign", mb(Double(peak)), "", "", "≤ 64 MB",
             peak > 0 && peak <= 64 << 20 ? "yes" : "no"])
    }

    // MARK: The campaign list

    static func listRows(jobs: Int, dir: URL, node: String, script: String) throws {
        let cfg = try configure(dir: dir)
        let spool = URL(fileURLWithPath: dir.appendingPathComponent("spool").path)
        FileHandle.standardError.write(Data("dashboard: writing \(jobs) jobs…\n".utf8))
        try writeJobs(jobs, spool: spool)
        try firstServeRows(jobs: jobs, dir: dir, config: cfg, node: node, script: script)
        // serve started again on the same spool: the list the first one saved, read back.
        let serve = try ServeRound.Serve(dir: dir, config: cfg)
        defer { _ = serve.stop() }
        let operators = try Operators(node: node, script: script, port: serve.port, sessions: 1)
        defer { operators.stop() }
        let first = try operators.time(["/ui/api/jobs?page=1"])
        let ended = try operators.time(["/ui/api/jobs?state=cancelled"])
        let peak = ReceiptsServe.highWaterMark(pid: serve.pid)
        row(["campaign list over \(jobs) jobs: first page after serve starts again (the list it saved, read back)",
             String(format: "%.0f ms", first.max), "", "", "≤ 200 ms", first.max <= 200 && first.failed == 0 ? "yes" : "no"])
        row(["same, then the first filter by an ended state (cancelled)", String(format: "%.0f ms", ended.max), "", "", "≤ 200 ms",
             ended.max <= 200 && ended.failed == 0 ? "yes" : "no"])
        row(["serve's peak RSS (VmHWM) so far, started again", mb(Double(peak)), "", "", "≤ 64 MB", peak > 0 && peak <= 64 << 20 ? "yes" : "no"])
    }

    /// The first `serve` on a spool of `jobs` jobs: every job file read once, then the list's pages, searches and filters.
    static func firstServeRows(jobs: Int, dir: URL, config cfg: String, node: String, script: String) throws {
        let serve = try ServeRound.Serve(dir: dir, config: cfg)
        defer { _ = serve.stop() }
        let operators = try Operators(node: node, script: script, port: serve.port, sessions: 1)
        defer { operators.stop() }
        let startCPU = processCPUSeconds(serve.pid)
        let first = try operators.time(["/ui/api/jobs?page=1"])
        let firstCPU = processCPUSeconds(serve.pid) - startCPU
        let pages = (0..<400).map { i in "/ui/api/jobs?page=\([1, 2, 3, jobs / 100, jobs / 50][i % 5] + i % 7)" }
        let list = try operators.time(pages)
        // Searches: a word in every tenth job, one in a single job, an id, and nothing.
        let words = ["winter", "headphones%2090", "job-0004217", "zzz-nothing"]
        let search = try operators.time((0..<400).map { "/ui/api/jobs?q=\(words[$0 % words.count])&page=\(1 + $0 % 3)" })
        let stateFirst = try operators.time(["/ui/api/jobs?state=cancelled"])
        let state = try operators.time((0..<12).map { "/ui/api/jobs?state=\(["cancelled", "waiting", "done"][$0 % 3])" })
        let waiting = try operators.time((0..<40).map { "/ui/api/jobs?state=waiting&page=\(1 + $0 % 3)" })
        let peak = ReceiptsServe.highWaterMark(pid: serve.pid)
        func ms(_ t: Operators.Timing) -> String { String(format: "p50 %.1f ms, p99 %.1f ms", t.p50, t.p99) }
        func met(_ t: Operators.Timing) -> String { t.p99 <= 200 && t.failed == 0 ? "yes" : "no" }
        row(["campaign list over \(jobs) jobs: first page after serve starts on a spool it never listed (every job file read once)",
             String(format: "%.0f ms", first.max), String(format: "serve's CPU %.2f s", firstCPU), "", "", ""])
        row(["campaign list, a page of 50 (400 requests, pages near the start and the end)", ms(list), "total \(list.total)", "",
             "≤ 200 ms", met(list)])
        row(["campaign list, text search (400 requests: a common word, a rare one, an id, none)", ms(search), "", "", "≤ 200 ms", met(search)])
        row(["campaign list, filtered by state (12 requests; a job not ended is asked its state as status does)", ms(state),
             String(format: "first %.0f ms", stateFirst.max), "", "", ""])
        row(["campaign list, filtered by waiting (40 requests over the queued jobs, pages 1–3)", ms(waiting), "total \(waiting.total)", "",
             "≤ 200 ms", met(waiting)])
        row(["serve's peak RSS (VmHWM), campaign list over \(jobs) jobs", mb(Double(peak)), "", "", "≤ 64 MB", peak > 0 && peak <= 64 << 20 ? "yes" : "no"])
    }

    /// `jobs` job files as a busy spool holds them: nine in ten done with a result log (the job's
    /// line, a delivery, the summary; one in twenty of them cancelled), one in a hundred failed
    /// (its log says why), the rest queued; varied titles and messages, some apps, a few secure.
    /// Each file's time is a second apart (the order the list shows).
    static func writeJobs(_ count: Int, spool: URL) throws {
        let products = ["headphones", "sneakers", "coffee maker", "backpack", "desk lamp", "e-reader", "rain jacket", "yoga mat", "blender", "watch"]
        let seasons = ["winter", "spring", "summer", "autumn", "weekend", "holiday", "flash", "members", "clearance", "launch"]
        let start = Date().timeIntervalSince1970 - Double(count)
        for i in 0..<count {
            let id = String(format: "job-%07d", i)
            let folder = i % 100 == 99 ? "failed" : i % 10 == 9 ? "incoming" : "done"
            let title = "\(seasons[i % 10].capitalized) sale: \(products[(i / 10) % 10]) \(10 + i % 60)% off"
            let app = i % 4 == 0 ? #", "app": ["shop"]"# : ""
            let secure = i % 50 == 1 ? #", "secure": true"# : ""
            let job = #"{"id": "\#(id)", "tags": "segment_\#(i % 40) && !optout", "pns": ["apns", "fcm"], "title": "\#(title)", "message": "Today only: \#(products[(i / 10) % 10]) at \#(10 + i % 60)% off. Tap to see the deals."\#(app)\#(secure)}"#
            let path = spool.appendingPathComponent("\(folder)/\(id).json").path
            try writeFile(path, job)
            var times = [timespec(tv_sec: Int(start) + i, tv_nsec: 0), timespec(tv_sec: Int(start) + i, tv_nsec: 0)]
            _ = utimensat(AT_FDCWD, path, &times, 0)
            guard folder != "incoming" else { continue }
            let at = rfc3339(Int(start) + i)
            let status = folder == "failed" ? "failed" : i % 20 == 0 ? "cancelled" : "done"
            var log = #"{"type":"job","id":"\#(id)","file":"\#(id).json","received_at":"\#(at)","pns":["apns","fcm"],"targets":2}"# + "\n"
            if folder == "done" {
                log += #"{"type":"delivery","platform":"apns","provider":"apns","app":"default","device":"d\#(i)","status":"delivered","attempts":1,"code":"200","reason":null,"provider_id":null,"at":"\#(at)"}"# + "\n"
            }
            log += #"{"type":"summary","id":"\#(id)","status":"\#(status)","delivered":1,"failed":0,"unregistered":0,"retries":0,"duration_ms":120}"# + "\n"
            try writeFile(spool.appendingPathComponent("results/\(id).jsonl").path, log)
        }
    }

    /// `text` as the file at `path`, plainly (Foundation's writes cost a temporary file and a
    /// rename each: 100,000 of them took minutes).
    static func writeFile(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else { throw BenchError(description: "cannot write \(path)") }
    }

    /// RFC 3339 of whole seconds since 1970 (UTC).
    static func rfc3339(_ seconds: Int) -> String {
        var t = time_t(seconds), tm = tm()
        gmtime_r(&t, &tm)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.000Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec)
    }

    /// A spool under `dir` served on a free port with one operator, alice (`s3cret`, bcrypt cost 5).
    static func configure(dir: URL) throws -> String {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: dir.appendingPathComponent("operators.htpasswd").path, contents: Data(ServeRound.users.utf8),
                                       attributes: [.posixPermissions: 0o600])
        let config = #"{"spool": "spool", "http": {"listen": "127.0.0.1:0", "operators_file": "operators.htpasswd", "rate_limit_per_minute": 1000000, "max_connections_per_address": 0}}"#
        let path = dir.appendingPathComponent("pushspool.json").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let made = try measure(BenchPaths.binary.path, ["init", "--config", path])
        guard made.status == 0 else { throw BenchError(description: "init failed: \(made.stderr)") }
        return path
    }

    // MARK: The operators (a Node process)

    /// Operators' sessions in a Node process: `sessions` logins through the form at start, then
    /// commands on its stdin, each answered with a line of JSON on its stdout.
    final class Operators {
        struct Polls { var answered: Int, failed: Int, codes: String, p50: Double, p99: Double }
        struct Timing { var p50: Double, p99: Double, max: Double, failed: Int, total: Int }

        let process = Process()
        private let input = Pipe(), output = Pipe()
        private var pending = Data()

        init(node: String, script: String, port: Int, sessions: Int) throws {
            process.executableURL = URL(fileURLWithPath: node)
            process.arguments = [script, String(port), String(sessions)]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let ready = try answer()
            guard ready["sessions"] as? Int == sessions else { throw BenchError(description: "the operators did not log in: \(ready)") }
        }

        func poll(_ id: String) throws {
            try send(["poll", id])
            _ = try answer()
        }

        func stopPolling() throws -> Polls {
            try send(["stop"])
            let a = try answer()
            return Polls(answered: a["answered"] as? Int ?? 0, failed: a["failed"] as? Int ?? -1, codes: a["codes"] as? String ?? "",
                         p50: a["p50"] as? Double ?? .nan, p99: a["p99"] as? Double ?? .nan)
        }

        /// Each path requested in turn by the first session; what each took.
        func time(_ paths: [String]) throws -> Timing {
            try send(["time"] + paths)
            let a = try answer()
            return Timing(p50: a["p50"] as? Double ?? .nan, p99: a["p99"] as? Double ?? .nan, max: a["max"] as? Double ?? .nan,
                          failed: a["failed"] as? Int ?? -1, total: a["total"] as? Int ?? -1)
        }

        private func send(_ words: [String]) throws {
            input.fileHandleForWriting.write(Data((words.joined(separator: " ") + "\n").utf8))
        }

        private func answer() throws -> [String: Any] {
            while !pending.contains(0x0A) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { throw BenchError(description: "the operators' process ended") }
                pending.append(chunk)
            }
            let nl = pending.firstIndex(of: 0x0A)!
            let line = pending[..<nl]
            pending = Data(pending[(nl + 1)...])
            guard let obj = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
                throw BenchError(description: "the operators said: \(String(decoding: line, as: UTF8.self))")
            }
            if let error = obj["error"] as? String { throw BenchError(description: "the operators: \(error)") }
            return obj
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    /// Node's http client with a keep-alive agent: the sessions log in as a browser does (the
    /// form, `303` and its cookie), then read the session's CSRF token as the page does.
    static let operatorsScript = #"""
        const http = require('http');
        const [port, count] = [Number(process.argv[2]), Number(process.argv[3])];
        const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
        function request(method, path, headers, body) {
          return new Promise((resolve, reject) => {
            const t0 = process.hrtime.bigint();
            const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, res => {
              const chunks = [];
              res.on('data', c => chunks.push(c));
              res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks),
                                            ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
            });
            req.on('error', reject);
            if (body) req.write(body);
            req.end();
          });
        }
        function pct(xs, p) { if (!xs.length) return null; const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; }
        const say = o => process.stdout.write(JSON.stringify(o) + '\n');
        const cookies = [];
        let polling = null;
        async function login() {
          for (let i = 0; i < count; i++) {
            const form = 'user=alice&password=s3cret';
            const r = await request('POST', '/ui/login', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': form.length,
                                                           'Origin': `http://127.0.0.1:${port}` }, form);
            const set = (r.headers['set-cookie'] || [])[0];
            if (r.status !== 303 || !set) throw new Error(`login ${i}: ${r.status}`);
            const cookie = set.split(';')[0];
            const s = await request('GET', '/ui/api/session', { Cookie: cookie });
            if (s.status !== 200 || !JSON.parse(s.body).csrf) throw new Error(`session ${i}: ${s.status}`);
            cookies.push(cookie);
          }
          if (new Set(cookies).size !== count) throw new Error('sessions share a cookie');
          say({ sessions: cookies.length });
        }
        function poll(id) {
          const state = { answered: 0, failed: 0, codes: {}, ms: [], timers: [], stopped: false };
          const path = '/ui/api/jobs/' + encodeURIComponent(id);
          cookies.forEach((cookie, i) => {
            // As the page: the next poll 1.5 s after the last answer; the sessions spread over the interval.
            const tick = async () => {
              if (state.stopped) return;
              try {
                const r = await request('GET', path, { Cookie: cookie });
                if (r.status === 200) { state.answered++; state.ms.push(r.ms); } else { state.failed++; state.codes[r.status] = (state.codes[r.status] || 0) + 1; }
              } catch (e) { state.failed++; state.codes[e.code || 'error'] = (state.codes[e.code || 'error'] || 0) + 1; }
              if (!state.stopped) state.timers[i] = setTimeout(tick, 1500);
            };
            state.timers[i] = setTimeout(tick, Math.floor(1500 * i / cookies.length));
          });
          return state;
        }
        async function time(paths) {
          const ms = []; let failed = 0, total = null;
          for (const p of paths) {
            const r = await request('GET', p, { Cookie: cookies[0] });
            if (r.status !== 200) { failed++; continue; }
            ms.push(r.ms);
            if (total === null) total = JSON.parse(r.body).total;
          }
          return { p50: pct(ms, 0.5), p99: pct(ms, 0.99), max: Math.max(...ms), failed, total };
        }
        let lines = '';
        let chain = login().catch(e => { say({ error: String(e) }); });
        process.stdin.on('data', d => {
          lines += d;
          let nl;
          while ((nl = lines.indexOf('\n')) >= 0) {
            const [verb, ...args] = lines.slice(0, nl).split(' ');
            lines = lines.slice(nl + 1);
            chain = chain.then(async () => {
              try {
                if (verb === 'poll') { polling = poll(args[0]); say({ polling: args[0] }); }
                else if (verb === 'stop') {
                  polling.stopped = true; polling.timers.forEach(clearTimeout);
                  say({ answered: polling.answered, failed: polling.failed, codes: JSON.stringify(polling.codes), p50: pct(polling.ms, 0.5), p99: pct(polling.ms, 0.99) });
                } else if (verb === 'time') say(await time(args));
              } catch (e) { say({ error: String(e) }); }
            });
          }
        });
        process.stdin.on('end', () => { agent.destroy(); process.exit(0); });
        """#
}
