import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit
@testable import PushspoolCLI

/// The real `pushspool` binary against the sandbox provider, in a fresh directory.
@Suite struct SandboxEndToEndTests {
    /// A working directory holding a copy of examples/, as a fresh clone would.
    func checkout() throws -> TempDir {
        let dir = TempDir("pushspool-e2e")
        try FileManager.default.copyItem(at: Paths.packageRoot.appendingPathComponent("examples"),
                                         to: dir.url.appendingPathComponent("examples"))
        return dir
    }

    @Test("demo: exits 0, good jobs in done/, the invalid one in failed/ with its reason, tutorial payloads in the outbox")
    func demo() throws {
        let dir = try checkout()
        let r = try runPushspool(["demo"], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("job demo-notify-alice: done — delivered 3, failed 0"))
        #expect(dir.list("jobs/demo/done") == ["demo-broadcast.json", "demo-localized.json", "demo-notify-alice.json", "demo-redsox-campaign.json"])
        #expect(dir.list("jobs/demo/failed") == ["demo-invalid.json"])
        let invalid = dir.jsonLines("jobs/demo/results/demo-invalid.jsonl")
        #expect(invalid.last?["status"] as? String == "failed")
        #expect((invalid.last?["error"] as? String)?.contains("pns[1]: unknown platform \"apnz\"") == true)
        let apns = dir.jsonLines("jobs/demo/outbox/apns.jsonl").filter { $0["job"] as? String == "demo-notify-alice" }
        #expect(apns.count == 1)
        #expect((apns.first?["payload"] as? [String: Any]).map { NSDictionary(dictionary: $0) } == NSDictionary(dictionary: ["aps": ["alert": "From bob: hi"]]))
        #expect(dir.read("jobs/demo/outbox/fcm.jsonl")?.contains(#""payload":{"message":{"data":{"message":"From bob: hi"}}}"#) == true)
        #expect(dir.read("jobs/demo/outbox/wns.jsonl")?.contains(#"<toast><visual><binding template=\"ToastText01\"><text id=\"1\">From bob: hi</text></binding></visual></toast>"#) == true)
        // The tag-expression campaign reached exactly the Boston fans.
        let campaign = dir.jsonLines("jobs/demo/results/demo-redsox-campaign.jsonl").filter { $0["type"] as? String == "delivery" }
        #expect(Set(campaign.compactMap { $0["device"] as? String }) == ["alice-iphone", "alice-pixel", "bob-iphone", "carol-laptop"])
        // The localized campaign: bob (fr) in French, carol (pt-BR → pt) in Portuguese, the rest the default.
        let localized = dir.jsonLines("jobs/demo/outbox/wns.jsonl") + dir.jsonLines("jobs/demo/outbox/apns.jsonl")
        let texts = Dictionary(localized.filter { $0["job"] as? String == "demo-localized" }.map {
            ($0["device"] as? String ?? "", "\($0["payload"] ?? "")")
        }) { a, _ in a }
        #expect(texts["bob-iphone"]?.contains("From Red Sox: Les billets") == true)
        #expect(texts["carol-laptop"]?.contains("From Red Sox: Os ingressos") == true)
        #expect(texts["alice-iphone"]?.contains("From Red Sox: Opening day") == true)
        // Running it again is a fresh tour, not a pile of duplicates.
        let again = try runPushspool(["demo"], cwd: dir.url)
        #expect(again.status == 0)
        #expect(!again.stdout.contains("duplicate"))
        #expect(dir.jsonLines("jobs/demo/outbox/apns.jsonl").filter { $0["job"] as? String == "demo-notify-alice" }.count == 1)
    }

    @Test("demo never touches the real spool, its pending jobs or its registry")
    func demoLeavesTheRealSpoolAlone() throws {
        let dir = try checkout()
        try initSpool([], cwd: dir.url)
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "real-token", "--tag", "t"], cwd: dir.url).status == 0)
        dir.write("jobs/incoming/quarterly.json", #"{"to_tag":"t","pns":"fcm","message":"real"}"#)
        dir.write("jobs/incoming/demo-launch.json", #"{"to_tag":"t","pns":"fcm","message":"real too"}"#)
        #expect(try runPushspool(["demo"], cwd: dir.url).status == 0)
        #expect(dir.list("jobs/incoming") == ["demo-launch.json", "quarterly.json"])
        #expect(try runPushspool(["devices", "--count"], cwd: dir.url).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        // A folder that is not a demo spool is refused, not cleared.
        let refused = try runPushspool(["demo", "--spool", "jobs"], cwd: dir.url)
        #expect(refused.status == 64)
        #expect(dir.list("jobs/incoming") == ["demo-launch.json", "quarterly.json"])
    }

    @Test("submit, register and run --once through the real binary; a resubmitted id is a duplicate")
    func submitAndRun() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        #expect(try runPushspool(["register", "--platform", "gcm", "--handle", "tok-a", "--tag", "username:alice", "--id", "a1"] + spool).status == 0)
        #expect(try runPushspool(["register", "--platform", "wns", "--handle", "https://x.notify.windows.com/?t=1", "--tag", "username:alice"] + spool).status == 0)
        let count = try runPushspool(["devices", "--tags", "username:alice", "--count"] + spool)
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        let submit = try runPushspool(["submit", "--to-tag", "username:alice", "--pns", "fcm,wns", "--message", "hi", "--from", "bob", "--id", "s1"] + spool)
        #expect(submit.status == 0, "\(submit.stderr)")
        let run = try runPushspool(["run", "--once"] + spool)
        #expect(run.status == 0)
        #expect(run.stdout.contains("job s1: done — delivered 2"))
        #expect(dir.list("spool/done") == ["s1.json"])
        // submit refuses a completed id; --allow-duplicate drops it anyway, for the run to refuse.
        #expect(try runPushspool(["submit", "--to-tag", "username:alice", "--pns", "fcm", "--message", "hi", "--id", "s1"] + spool).status == 65)
        #expect(try runPushspool(["submit", "--to-tag", "username:alice", "--pns", "fcm", "--message", "hi", "--id", "s1", "--allow-duplicate"] + spool).status == 0)
        let again = try runPushspool(["run", "--once"] + spool)
        #expect(again.stdout.contains("job s1: duplicate"))
        #expect(dir.jsonLines("spool/outbox/fcm.jsonl").count == 1)
        let status = try runPushspool(["status", "--json"] + spool)
        #expect(status.stdout.contains(#""done":{"count":2"#))
    }

    @Test("bad input gets one line per problem naming the field, and sysexits codes")
    func exitCodes() throws {
        let dir = TempDir("pushspool-e2e")
        dir.write("bad.json", #"{"to_tag":"username:alice","pns":"apns","message":"x","badge":-1}"#)
        dir.write("good.json", #"{"to_tag":"username:alice","pns":"apns","message":"x"}"#)
        let v = try runPushspool(["validate", dir.path("bad.json"), dir.path("good.json")])
        #expect(v.status == 65)
        #expect(v.stdout.contains("bad.json: badge:"))
        #expect(v.stdout.contains("good.json: ok"))
        #expect(try runPushspool(["frobnicate"]).status == 64)
        #expect(try runPushspool(["submit", "--pns", "apns"], cwd: dir.url).status == 64)
        dir.write("pushspool.json", #"{"concurrency": 0, "colour": "blue", "sppol": "s", "providers": {"wns": {"client_id": "x", "client_secret": "env:NOPE_NOT_SET"}}}"#)
        let check = try runPushspool(["config", "--check"], cwd: dir.url)
        #expect(check.status == 78)
        #expect(check.stderr.contains("colour: unknown key\n"))
        #expect(check.stderr.contains("sppol: unknown key (did you mean \"spool\"?)"))
        #expect(check.stderr.contains("concurrency: must be an integer"))
        #expect(check.stderr.contains("providers.wns.client_secret: environment variable NOPE_NOT_SET is not set"))
        let ok = try runPushspool(["config", "--check", "--config", "/dev/null"], cwd: dir.url)
        #expect(ok.status == 78)   // an empty file is not a JSON object
    }

    @Test("producers drop jobs without the dispatcher's secrets; run needs them")
    func submitNeedsNoSecrets() throws {
        let dir = TempDir("pushspool-e2e")
        dir.write("pushspool.json", #"{"routes": {"wns": "wns"}, "providers": {"wns": {"client_id": "ms-app://x", "client_secret": "env:UNSET_WNS_SECRET_X"}}}"#)
        try initSpool([], cwd: dir.url)
        let submit = try runPushspool(["submit", "--to-tag", "t", "--pns", "wns", "--message", "m", "--id", "p1"], cwd: dir.url)
        #expect(submit.status == 0, "\(submit.stderr)")
        #expect(try runPushspool(["status"], cwd: dir.url).status == 0)
        let run = try runPushspool(["run", "--once"], cwd: dir.url)
        #expect(run.status == 78)
        #expect(run.stderr.components(separatedBy: "UNSET_WNS_SECRET_X").count == 2, "reported once: \(run.stderr)")
        #expect(dir.list("jobs/incoming") == ["p1.json"])
    }

    /// Only `init` creates a spool: a mistyped path is an error naming the path and the command
    /// that creates it, never a new spool nobody watches (exit 78, nothing written).
    @Test func onlyInitCreatesASpool() throws {
        let dir = TempDir("pushspool-e2e")
        dir.write("devices.jsonl", #"{"platform":"fcm","handle":"t1","tags":["a"]}"#)
        let missing = dir.path("nope-spool")
        let commands: [[String]] = [
            ["submit", "--to-tag", "a", "--pns", "fcm", "--message", "m"], ["run", "--once"], ["devices", "--count"],
            ["register", "--platform", "fcm", "--handle", "t2"], ["unregister", "--id", "x"],
            ["import", dir.path("devices.jsonl")], ["status"], ["status", "--json"],
        ]
        for command in commands {
            let r = try runPushspool(command + ["--spool", missing], cwd: dir.url)
            #expect(r.status == 78, "\(command): \(r.stdout)")
            #expect(r.stderr == "pushspool: no spool at \(missing) (create it with `pushspool init --spool \(missing)`, or give the right --spool/--config)\n", "\(command)")
            #expect(!FileManager.default.fileExists(atPath: missing), "\(command) created the spool")
        }
        // No config and no spool in the working directory: ./jobs is not conjured up either.
        let bare = try runPushspool(["run", "--once"], cwd: dir.url)
        #expect(bare.status == 78)
        #expect(bare.stderr.contains("no spool at \(dir.url.standardizedFileURL.path)/jobs"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("jobs")))

        let created = try runPushspool(["init", "--spool", missing], cwd: dir.url)
        #expect(created.status == 0)
        #expect(created.stdout.hasPrefix("created spool \(missing)"))
        #expect(dir.list("nope-spool") == [".state", "active", "control", "done", "failed", "incoming", "outbox", "registry.sqlite", "results", "tmp"])
        let again = try runPushspool(["init", "--spool", missing], cwd: dir.url)
        #expect(again.status == 0)
        #expect(again.stdout.contains("already exists"))
        #expect(try runPushspool(["devices", "--count", "--spool", missing], cwd: dir.url).stdout == "0\n")
    }

    /// `run --once` from cron is never silent: nothing due says so, a scheduled job says when,
    /// and a job whose audience matches no device ends with a warning, not a quiet "delivered 0".
    @Test func runOnceSaysWhatItDidNotDo() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        let idle = try runPushspool(["run", "--once"] + spool)
        #expect(idle.status == 0)
        #expect(idle.stdout == "nothing due in \(dir.url.standardizedFileURL.path)/spool/incoming\n")
        #expect(try runPushspool(["submit", "--to-tag", "t", "--pns", "apns", "--message", "m", "--id", "later",
                                  "--not-before", "2030-01-01T00:00:00Z"] + spool).status == 0)
        #expect(try runPushspool(["register", "--platform", "apns", "--handle", String(repeating: "ab", count: 32), "--tag", "username:alice"] + spool).status == 0)
        #expect(try runPushspool(["submit", "--to-tag", "username:alcie", "--pns", "apns", "--message", "m", "--id", "typo"] + spool).status == 0)
        let r = try runPushspool(["run", "--once"] + spool)
        #expect(r.status == 0)
        #expect(r.stdout.contains("job typo: done — warning: no registered device matches its audience, nothing sent"))
        #expect(r.stdout.contains("next scheduled: later.json at 2030-01-01T00:00:00.000Z"))
        #expect(r.stderr.contains("job typo: no registered device matches its audience on apns"))
        let summary = dir.jsonLines("spool/results/typo.jsonl").last
        #expect(summary?["matched"] as? Int == 0)
        #expect((summary?["warning"] as? String)?.contains("no registered device") == true)
    }

    /// The small rough edges a new user met: one exit code for a mistyped platform wherever it is
    /// typed, the common options under every command's help, an invalid job's log saying what it
    /// asked for, absolute paths from `config --check`.
    @Test func roughEdges() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        for command in [["register", "--platform", "ios", "--handle", "x"], ["submit", "--to-tag", "a", "--pns", "apns,ios", "--message", "m"],
                        ["devices", "--platform", "ios"]] {
            let r = try runPushspool(command + spool)
            #expect(r.status == 64, "\(command)")
            #expect(r.stderr.contains("unknown platform \"ios\" (expected apns, fcm, gcm, wns, web, hms, adm)"), "\(command): \(r.stderr)")
        }
        for command in ["run", "submit", "register", "devices", "import", "status", "hub", "init"] {
            let help = try runPushspool([command, "--help"]).stdout
            #expect(help.contains("--spool DIR") && help.contains("--config FILE"), "\(command)")
        }
        dir.write("spool/incoming/bad.json", #"{"to_tag":"a","pns":["apns","gcm"],"message":"m","badge":-1}"#)
        #expect(try runPushspool(["run", "--once"] + spool).status == 0)
        let jobLine = dir.jsonLines("spool/results/bad.jsonl").first
        #expect(jobLine?["pns"] as? [String] == ["apns", "fcm"])
        // A bad import line is named with its number and field; the good ones are imported.
        dir.write("devices.jsonl", [#"{"platform":"fcm","handle":"ok-1","tags":[]}"#, #"{"platform":"ios","handle":"x","tags":[]}"#,
                                    #"{"platform":"fcm","handle":"ok-2","tags":[]}"#].joined(separator: "\n"))
        let imported = try runPushspool(["import", dir.path("devices.jsonl")] + spool)
        #expect(imported.status == 65)
        #expect(imported.stdout == "imported 2 devices, refused 1 lines\n")
        #expect(imported.stderr.contains("line 2: platform: unknown platform \"ios\" (expected apns, fcm, gcm, wns, web, hms, adm)"))
        #expect(try runPushspool(["devices", "--count", "--platform", "fcm"] + spool).stdout == "2\n")
        let check = try runPushspool(["config", "--check"], cwd: dir.url)
        #expect(check.stdout.contains("\"outbox\": \"\(dir.url.standardizedFileURL.path)/jobs/outbox\""), "\(check.stdout)")
    }

    /// Handles are checked at registration as the services check them, and the sandbox refuses
    /// what the real provider would, with the same outcome: a rehearsal is not kinder than the run.
    @Test func registrationAndSandboxRefuseWhatTheServicesWould() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        let notHex = try runPushspool(["register", "--platform", "apns", "--handle", "not-hex"] + spool)
        #expect(notHex.status == 65)
        #expect(notHex.stderr == "pushspool: register: --handle: an APNs device token must be an even number (64 or more) of hex digits\n")
        let plain = try runPushspool(["register", "--platform", "wns", "--handle", "http://evil.example.com/x"] + spool)
        #expect(plain.status == 65)
        #expect(plain.stderr.contains("a WNS channel URI must be an absolute https URL"))
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "bad token!"] + spool).status == 65)
        #expect(try runPushspool(["devices", "--count"] + spool).stdout == "0\n")
        // Devices written before these checks existed: the sandbox answers as the services would.
        let registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        try registry.upsert(Registration(id: "old-apns", platform: .apns, handle: "ab12", tags: ["t"]))
        try registry.upsert(Registration(id: "old-wns", platform: .wns, handle: "http://evil.example.com/x", tags: ["t"]))
        try registry.upsert(Registration(id: "good", platform: .apns, handle: String(repeating: "ab", count: 32), tags: ["t"]))
        registry.close()
        #expect(try runPushspool(["submit", "--to-tag", "t", "--pns", "apns,wns", "--message", "m", "--id", "rehearsal"] + spool).status == 0)
        #expect(try runPushspool(["run", "--once"] + spool).status == 0)
        let lines = dir.jsonLines("spool/results/rehearsal.jsonl").filter { $0["type"] as? String == "delivery" }
        let byDevice = Dictionary(uniqueKeysWithValues: lines.map { ($0["device"] as? String ?? "", $0) })
        #expect(byDevice["old-apns"]?["status"] as? String == "unregistered")
        #expect(byDevice["old-apns"]?["reason"] as? String == "BadDeviceToken")
        #expect(byDevice["old-wns"]?["status"] as? String == "failed")
        #expect(byDevice["old-wns"]?["code"] as? String == "host-not-allowed")
        #expect(byDevice["good"]?["status"] as? String == "delivered")
        #expect(dir.jsonLines("spool/outbox/apns.jsonl").count == 1)
        #expect(try runPushspool(["devices", "--count"] + spool).stdout == "2\n", "the bad APNs token was pruned, as APNs would have it")
    }

    /// The dry run: who a job would reach and what each platform would receive; nothing sent.
    @Test func validateResolveIsADryRun() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        #expect(try runPushspool(["register", "--platform", "apns", "--handle", String(repeating: "ab", count: 32),
                                  "--tag", "username:alice", "--lang", "fr"] + spool).status == 0)
        dir.write("job.json", #"{"to_tag":"username:alice","pns":["apns","wns"],"from":"bob","message":"hi","localized":{"fr":{"message":"salut"}}}"#)
        let r = try runPushspool(["validate", "--resolve", dir.path("job.json")] + spool)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map { String($0.dropFirst(dir.path("job.json").count + 2)) }
        #expect(lines == ["ok (id job)",
                          "apns via sandbox: 1 devices",
                          #"  {"aps":{"alert":"From bob: hi"}}"#,
                          #"  [fr] {"aps":{"alert":"From bob: salut"}}"#,
                          "wns via sandbox: 0 devices",
                          #"  <toast><visual><binding template="ToastText01"><text id="1">From bob: hi</text></binding></visual></toast>"#,
                          #"  [fr] <toast><visual><binding template="ToastText01"><text id="1">From bob: salut</text></binding></visual></toast>"#])
        #expect(dir.list("spool/outbox").isEmpty && dir.list("spool/incoming").isEmpty && dir.list("spool/results").isEmpty)
    }

    /// On a terminal a long import shows a progress line (drawn in place with `\r`, cleared at
    /// the end); piped, only the final line. `script` gives the command a real pseudo-terminal.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func importShowsProgressOnATerminalOnly() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        dir.write("devices.jsonl", (0..<6000).map { #"{"platform":"fcm","handle":"t\#($0)","tags":["a"]}"# }.joined(separator: "\n"))
        let command = ([Paths.binary.path, "import", dir.path("devices.jsonl")] + spool).joined(separator: " ")
        let tty = try runPushspoolVia("/usr/bin/script", ["-qec", command, "/dev/null"])
        #expect(tty.status == 0)
        #expect(tty.stdout.contains("\r\u{1B}[Kimport: reading \(dir.path("devices.jsonl")): "), "\(tty.stdout.debugDescription)")
        #expect(tty.stdout.contains("imported 6000 devices"))
        let piped = try runPushspool(["import", dir.path("devices.jsonl")] + spool)
        #expect(piped.stdout == "imported 6000 devices\n")
        #expect(piped.stderr.isEmpty)
    }

    /// The repository stands alone: its README points at nothing outside it.
    @Test func readmeReferencesOnlyTheRepository() throws {
        let readme = try String(contentsOf: Paths.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        for outside in ["../shared", "SPEC.md", "PROTOCOLS.md", "STYLE.md", "the SPEC", "SPEC "] {
            #expect(!readme.contains(outside), "README mentions \(outside)")
        }
        // Nor do the sources, examples and the spool's README (their comments name README sections).
        for folder in ["Sources", "examples", "jobs"] {
            let root = Paths.packageRoot.appendingPathComponent(folder)
            for case let url as URL in FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)! {
                guard let text = try? String(contentsOf: url, encoding: .utf8) else { continue }
                for outside in ["../shared", "SPEC.md", "PROTOCOLS.md", "PROTOCOLS §", "STYLE.md", "SPEC \"", "linux-interop"] {
                    #expect(!text.contains(outside), "\(folder)/\(url.lastPathComponent) mentions \(outside)")
                }
            }
        }
    }

    /// The shipped service units stop the dispatcher the way it stops cleanly (SIGTERM to the
    /// main process) and give it longer than its own grace for requests in flight, so systemd
    /// never SIGKILLs a dispatcher that is still stopping; the cron line uses `run --once`.
    @Test func shippedUnitsAndCronLineFitTheStopContract() throws {
        for unit in ["pushspool.service", "pushspool-host.service"] {
            let text = try String(contentsOf: Paths.packageRoot.appendingPathComponent("examples/systemd/\(unit)"), encoding: .utf8)
            var settings: [String: String] = [:]
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { settings[parts[0]] = parts[1] }
            }
            #expect(["SIGTERM", "SIGINT", "SIGHUP", nil].contains(settings["KillSignal"]), "\(unit)")
            #expect(["mixed", "control-group", nil].contains(settings["KillMode"]), "\(unit)")
            let timeout = try #require(settings["TimeoutStopSec"].flatMap(Double.init), "\(unit) sets TimeoutStopSec")
            #expect(timeout > stopGrace + 5, "\(unit): TimeoutStopSec \(timeout) s leaves no room for the \(stopGrace) s grace")
            #expect(settings["ExecStart"]?.contains(" run ") == true, "\(unit)")
            #expect(settings["ExecStart"]?.contains("--once") == false, "\(unit)")
        }
        let cron = try String(contentsOf: Paths.packageRoot.appendingPathComponent("examples/cron/pushspool.cron"), encoding: .utf8)
        #expect(cron.split(separator: "\n").contains { !$0.hasPrefix("#") && $0.contains("pushspool run --once") })
    }

    /// An example config used in place points at `examples/config/jobs`, which only `init`
    /// creates: run refuses it and writes nothing under `examples/`.
    @Test func exampleConfigUsedInPlaceWritesNothing() throws {
        let dir = try checkout()
        let r = try runPushspool(["run", "--once", "--config", "examples/config/sandbox.json"], cwd: dir.url)
        #expect(r.status == 78)
        #expect(r.stderr.contains("no spool at"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("examples/config/jobs")))
    }

    /// A registration job arriving while another process holds the registry's write lock longer
    /// than the old 5 s busy timeout (a big import) waits for it instead of failing for good.
    @Test func registrationWaitsOutALongWriteLock() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        let holder = try SQLiteDatabase(path: dir.path("spool/registry.sqlite"))
        try holder.execute("PRAGMA busy_timeout = 5000; BEGIN IMMEDIATE")
        dir.write("spool/incoming/reg.json", #"{"kind":"register","id":"phone-1","platform":"fcm","handle":"tok-1","tags":["a"]}"#)
        let p = try startPushspool(["run", "--once"] + spool)
        Thread.sleep(forTimeInterval: 6.5)
        try holder.execute("COMMIT")
        holder.close()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(dir.list("spool/done") == ["reg.json"])
        #expect(dir.list("spool/failed").isEmpty)
        #expect(try runPushspool(["devices", "--count"] + spool).stdout == "1\n")
    }

    /// A spool moved away under a watching dispatcher: it stops (exit 74, saying why) instead of
    /// sending to a registry nobody can reach while new jobs wait at the path.
    @Test func aSpoolMovedAwayStopsTheDispatcher() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        let err = Pipe()
        let p = try startPushspool(["run"] + spool, stderr: err)
        eventually("the dispatcher's presence record", timeout: 30) { !dir.list("spool/.state/dispatchers").isEmpty }
        try FileManager.default.moveItem(atPath: dir.path("spool"), toPath: dir.path("spool-old"))
        try initSpool(spool)
        let started = Date()
        // A dispatcher that never notices fails the test instead of holding the suite.
        if !eventually("the dispatcher to stop", timeout: 30, { !p.isRunning }) { p.interrupt() }
        p.waitUntilExit()
        let stderr = String(decoding: readToEnd(err.fileHandleForReading.fileDescriptor), as: UTF8.self)
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(p.terminationStatus == 74)
        #expect(stderr.contains("the spool \(dir.path("spool")) was deleted or replaced while running; stopped"), "\(stderr)")
    }

    /// The registry replaced under a watching dispatcher (a restore renamed over it while it
    /// runs): it stops too, rather than write to a file nobody else opens.
    @Test func aRegistryReplacedStopsTheDispatcher() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        try FileManager.default.copyItem(atPath: dir.path("spool/registry.sqlite"), toPath: dir.path("restored.sqlite"))
        let err = Pipe()
        let p = try startPushspool(["run"] + spool, stderr: err)
        eventually("the dispatcher's presence record", timeout: 30) { !dir.list("spool/.state/dispatchers").isEmpty }
        #expect(rename(dir.path("restored.sqlite"), dir.path("spool/registry.sqlite")) == 0)
        if !eventually("the dispatcher to stop", timeout: 30, { !p.isRunning }) { p.interrupt() }
        p.waitUntilExit()
        let stderr = String(decoding: readToEnd(err.fileHandleForReading.fileDescriptor), as: UTF8.self)
        #expect(p.terminationStatus == 74)
        #expect(stderr.contains("the registry \(dir.path("spool/registry.sqlite")) was deleted or replaced while running; stopped"), "\(stderr)")
    }

    /// A job written in place (no tmp/ + rename) is not claimed half-written: it waits until it has
    /// stopped changing, then runs. SIGHUP stops the dispatcher cleanly, as SIGTERM does.
    @Test func inPlaceWritesWaitAndSIGHUPStopsCleanly() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "t"] + spool).status == 0)
        let err = Pipe()
        let p = try startPushspool(["run"] + spool, stderr: err)
        eventually("the dispatcher's presence record", timeout: 30) { !dir.list("spool/.state/dispatchers").isEmpty }
        let job = #"{"to_tag":"t","pns":"fcm","message":"written slowly"}"#
        let path = dir.path("spool/incoming/slow.json")
        _ = FileManager.default.createFile(atPath: path, contents: Data(job.prefix(20).utf8))
        // A whole job dropped after the half-written one and run to its end: the dispatcher has
        // listed incoming/ with the half-written file in it, and left that one where it was.
        dir.write("spool/tmp/after.json", #"{"to_tag":"t","pns":"fcm","message":"whole"}"#)
        rename(dir.path("spool/tmp/after.json"), dir.path("spool/incoming/after.json"))
        eventually("the whole job dropped after it to be done", timeout: 30, lastSeen: { "done \(dir.list("spool/done")), failed \(dir.list("spool/failed"))" }) {
            dir.list("spool/done") == ["after.json"]
        }
        #expect(dir.list("spool/incoming") == ["slow.json"], "the half-written job is not claimed")
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(job.dropFirst(20).utf8))
        try handle.close()
        eventually("the completed job to run", timeout: 30, lastSeen: { "done \(dir.list("spool/done")), failed \(dir.list("spool/failed"))" }) {
            dir.list("spool/done").count == 2 || !dir.list("spool/failed").isEmpty
        }
        #expect(dir.list("spool/done") == ["after.json", "slow.json"])
        #expect(dir.list("spool/failed").isEmpty)
        kill(p.processIdentifier, SIGHUP)
        p.waitUntilExit()
        #expect(p.terminationReason == .exit && p.terminationStatus == 0)
        let stderr = String(decoding: readToEnd(err.fileHandleForReading.fileDescriptor), as: UTF8.self)
        #expect(stderr.hasSuffix("pushspool: info: SIGHUP: stopping: no new job is taken; the requests in flight are answered (at most 30 s)\npushspool: info: stopped\n"), "\(stderr)")
    }

    /// A scheduled job replaced by a new version that keeps the old mtime (`cp -p`, then a
    /// rename) is read again: the new `not_before` counts, not the remembered one.
    @Test func aReplacedScheduledJobIsReadAgainWhateverItsMtime() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "t"] + spool).status == 0)
        dir.write("spool/incoming/later.json", #"{"to_tag":"t","pns":"fcm","message":"m","not_before":"2030-01-01T00:00:00Z"}"#)
        // A due job beside it: once that one is done, the dispatcher has listed incoming/ and
        // remembered the scheduled one's version.
        dir.write("spool/incoming/now.json", #"{"to_tag":"t","pns":"fcm","message":"m"}"#)
        let p = try startPushspool(["run"] + spool)
        defer { p.terminate(); p.waitUntilExit() }
        eventually("the due job beside the scheduled one to be done", timeout: 30) { dir.list("spool/done") == ["now.json"] }
        #expect(dir.list("spool/incoming") == ["later.json"])
        // The new version says "now" (a longer file, so not a same-size rewrite) and gets the old
        // version's modification time before it is renamed over it.
        var old = stat()
        #expect(stat(dir.path("spool/incoming/later.json"), &old) == 0)
        dir.write("spool/tmp/later.json", #"{"to_tag":"t","pns":"fcm","message":"m now","not_before":"2020-01-01T00:00:00Z"}"#)
        var times = [old.st_atim, old.st_mtim]   // to the nanosecond, as `cp -p` does
        #expect(utimensat(AT_FDCWD, dir.path("spool/tmp/later.json"), &times, 0) == 0)
        rename(dir.path("spool/tmp/later.json"), dir.path("spool/incoming/later.json"))
        eventually("the replaced job to run", timeout: 30, lastSeen: { "done \(dir.list("spool/done"))" }) { dir.list("spool/done").count == 2 }
        #expect(dir.list("spool/done") == ["later.json", "now.json"])
    }

    @Test("config --check validates without creating anything")
    func configCheckCreatesNothing() throws {
        let dir = TempDir("pushspool-e2e")
        let r = try runPushspool(["config", "--check"], cwd: dir.url)
        #expect(r.status == 0)
        #expect(r.stdout.contains("configuration ok"))
        #expect(dir.list(".").isEmpty)
    }

    @Test("a world-writable spool is refused")
    func worldWritable() throws {
        let dir = TempDir("pushspool-e2e")
        try initSpool(["--spool", dir.path("s")])
        chmod(dir.path("s/incoming"), 0o777)
        let r = try runPushspool(["run", "--once", "--spool", dir.path("s")])
        #expect(r.status == 78)
        #expect(r.stderr.contains("world-writable"))
    }

    @Test("run (watching) picks up a dropped job and stops cleanly on SIGTERM")
    func watchAndStop() throws {
        let (dir, spool) = try initializedSpool("pushspool-e2e")
        #expect(try runPushspool(["register", "--platform", "apns", "--handle", String(repeating: "ab", count: 32), "--tag", "t"] + spool).status == 0)
        let p = try startPushspool(["run"] + spool)
        #expect(try runPushspool(["submit", "--to-tag", "t", "--pns", "apns", "--message", "m", "--id", "w1"] + spool).status == 0)
        eventually("the submitted job to be done", timeout: 30) { !dir.list("spool/done").isEmpty }
        p.terminate()
        p.waitUntilExit()
        #expect(dir.list("spool/done") == ["w1.json"])
        #expect(p.terminationStatus == 0)
    }
}
