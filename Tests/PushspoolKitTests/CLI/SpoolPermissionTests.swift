import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 24 item 3: a spool that exists but that this user may not use says so — the path, the
/// user and the fix, exit 77 (EX_NOPERM) — instead of "no spool at …" (whose advice, `init`,
/// fails the same way). The commands run as `nobody` (tests run as root in CI).
@Suite(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct SpoolPermissionTests {
    static func asNobody(_ args: [String], cwd: URL) throws -> RunResult {
        try runPushspoolVia("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                 "/bin/sh", "-c", "cd \"$1\" && shift && exec \"$0\" \"$@\"", Paths.binaryForOtherUsers.path, cwd.path] + args)
    }

    @Test("a spool made by root, used by nobody: permission denied, with the user and the fix")
    func rootSpoolUsedByAnotherUser() throws {
        let dir = TempDir("pushspool-perm")
        chmod(dir.url.path, 0o755)   // nobody may reach the spool, not enter it
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        for args in [["run", "--once"], ["status"], ["devices"], ["init"], ["submit", "--to-tag", "t", "--pns", "fcm", "--message", "hi"],
                     ["pause", "x"]] {
            let r = try Self.asNobody(args + spool, cwd: dir.url)
            #expect(r.status == 77, "\(args): exit \(r.status): \(r.stderr)")
            #expect(r.stderr.contains("spool \(dir.path("spool")) exists but user nobody may not read \(dir.path("spool"))"), "\(args): \(r.stderr)")
            #expect(r.stderr.contains("sudo -u root pushspool") && r.stderr.contains("chown -R nobody \(dir.path("spool"))"), "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("no spool at"), "\(args): \(r.stderr)")
        }
    }

    @Test("a spool nobody may read but not write: run and submit say which folder")
    func readOnlySpool() throws {
        let dir = TempDir("pushspool-perm")
        chmod(dir.url.path, 0o755)
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        for folder in ["", "/tmp", "/incoming", "/active", "/done", "/failed", "/results", "/outbox", "/control"] {
            chmod(dir.path("spool") + folder, 0o755)
        }
        let run = try Self.asNobody(["run", "--once"] + spool, cwd: dir.url)
        #expect(run.status == 77 && run.stderr.contains("user nobody may not write to \(dir.path("spool"))/"), "\(run.stderr)")
        let submit = try Self.asNobody(["submit", "--to-tag", "t", "--pns", "fcm", "--message", "hi"] + spool, cwd: dir.url)
        #expect(submit.status == 77 && submit.stderr.contains("may not write to \(dir.path("spool"))/tmp"), "\(submit.stderr)")
        #expect(dir.list("spool/incoming").isEmpty)
    }
}
