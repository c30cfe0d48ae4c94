import Foundation
import Testing
@testable import PushspoolKit

/// Issue 27 §5: one layer adds the context. A storage error already names the registry, so the
/// layers above it never say `registry: registry: …`.
@Suite struct ErrorContextTests {
    @Test("a registry that is not a database: every command names the registry once")
    func corruptRegistry() throws {
        let dir = TempDir("pushspool-ctx")
        // A registry file name without the word "registry", so each line can be counted.
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "devs.db"}"#)
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        try initSpool(common, cwd: dir.url)
        dir.write("devs.db", String(repeating: "this is not an SQLite file\n", count: 200))
        dir.write("job.json", #"{"id": "v1", "to_tag": "username:alice", "pns": "apns", "message": "hi"}"#)
        dir.write("one.jsonl", #"{"id": "d1", "platform": "fcm", "handle": "fcm-1", "tags": ["t"]}"# + "\n")
        for args in [["devices"], ["devices", "--count"], ["registry", "migrate"], ["validate", "--resolve", "job.json"],
                     ["register", "--platform", "fcm", "--handle", "fcm-2", "--id", "d2"], ["unregister", "--id", "d1"],
                     ["import", "one.jsonl"]] {
            let r = try runPushspool(args + common, cwd: dir.url, timeout: 30)
            #expect(r.status != 0, "\(args): \(r.stdout)")
            #expect(r.stderr.contains("registry"), "\(args): \(r.stderr)")
            for line in r.stderr.split(separator: "\n") {
                #expect(line.components(separatedBy: "registry").count <= 2, "\(args): \(line)")
            }
        }
    }

    /// `results` on a host whose registry variable is not set: no log here, and it says the
    /// shared queue (where another host's job is) was not asked, and why.
    @Test func resultsSaysWhyTheSharedQueueWasNotAsked() throws {
        let dir = TempDir("pushspool-ctx-results")
        dir.write("pushspool.json", #"{"spool": "spool"}"#)
        try initSpool(["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")], cwd: dir.url)
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "env:PUSHSPOOL_UNSET_REGISTRY"}"#)
        let r = try runPushspool(["results", "spring-sale", "--spool", dir.path("spool"), "--config", dir.path("pushspool.json")],
                                 cwd: dir.url, timeout: 30)
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.hasSuffix("and the shared queue was not asked: registry: env:PUSHSPOOL_UNSET_REGISTRY not set\n"), "\(r.stderr)")
    }

    @Test func detailDropsTheStorageLayersPrefixOnly() {
        #expect(RegistryError.detail(RegistryError("registry: disk I/O error")) == "disk I/O error")
        #expect(RegistryError.detail(RegistryError("platform: unknown")) == "platform: unknown")
    }
}
