import Foundation
import Testing
@testable import PushspoolKit

/// With a PostgreSQL registry, any host's `serve` answers any id: host a accepts and sends a
/// secure job; alice's app fetches it, and reports it, through host b (a spool of its own, the
/// registry shared), and host a's funnel counts what b recorded. A wrong user gets the same `404`
/// from either host.
@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct SecurePushPostgresTests {
    @Test func anyHostAnswersAnyID() throws {
        let cluster = try PostgresCluster.shared.get()
        let uri = try cluster.createDatabase("secure")
        let dir = TempDir("pushspool-secure-hosts")
        FrontDoorFiles.write(into: dir)
        let env = ["PUSHSPOOL_TEST_REGISTRY": uri]
        var hosts: [ServeProcess] = []
        for host in ["a", "b"] {
            dir.write("\(host).json", #"{"spool": "\#(host)", "registry": "env:PUSHSPOOL_TEST_REGISTRY", \#(FrontDoorFiles.section())}"#)
            let made = try runPushspool(["init", "--config", dir.path("\(host).json")], cwd: dir.url, env: env)
            #expect(made.status == 0, "\(made.stderr)")
            hosts.append(try ServeProcess(config: dir.path("\(host).json"), cwd: dir.url, env: env))
        }
        let a = dir.path("a.json")
        var r = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-alice", "--tag", "username:alice", "--lang", "pt-BR",
                                  "--id", "alice-phone", "--config", a], cwd: dir.url, env: env)
        #expect(r.status == 0, "\(r.stderr)")
        let service = [("Authorization", FrontDoorFiles.bearer)]
        let job = #"{"id": "pix-1", "to_tag": "username:alice", "pns": ["fcm"], "from": "Banco", "message": "You received 50 BRL", "#
            + #""localized": {"pt": {"message": "Você recebeu 50 BRL"}}, "secure": true}"#
        var answer = try hosts[0].client().request("POST", "/v1/jobs", headers: service, body: job)
        #expect(answer.status == 202, "\(answer.text)")
        r = try runPushspool(["run", "--once", "--config", a], cwd: dir.url, env: env)
        #expect(r.status == 0, "\(r.stderr)")
        let sent = try #require(dir.jsonLines("a/outbox/fcm.jsonl").first)
        let id = try #require((((sent["payload"] as? [String: Any])?["message"] as? [String: Any])?["data"] as? [String: String])?["secureId"], "\(sent)")

        // Through host b, which never saw the job.
        let alice = [("Authorization", FrontDoorFiles.basic("alice"))]
        answer = try hosts[1].client().request("GET", "/api/notifications/\(id)", headers: alice)
        #expect(answer.status == 200 && (answer.json as? [String: Any])?["Payload"] as? String == "From Banco: Você recebeu 50 BRL", "\(answer.text)")
        answer = try hosts[1].client().request("POST", "/api/notifications/\(id)/events", headers: alice, body: #"{"type": "opened"}"#)
        #expect(answer.status == 200 && (answer.json as? [String: String])?["status"] == "recorded", "\(answer.text)")
        // Read on host a: b's fetch counted.
        answer = try hosts[0].client().request("GET", "/api/notifications/\(id)", headers: alice)
        #expect((answer.json as? [String: Any])?["Read"] as? Bool == true, "\(answer.text)")
        answer = try hosts[0].client().request("GET", "/v1/jobs/pix-1", headers: service)
        let funnel = try #require((answer.json as? [String: Any])?["funnel"] as? [String: Any], "\(answer.text)")
        #expect(funnel.int("delivered") == 1 && funnel.int("received") == 1 && funnel.int("opened") == 1, "\(funnel)")

        // bob, on either host: the one 404.
        let bob = [("Authorization", FrontDoorFiles.basic("bob"))]
        let misses = try hosts.map { try $0.client().request("GET", "/api/notifications/\(id)", headers: bob) }
        #expect(misses.allSatisfy { $0.status == 404 && $0.text == #"{"error":"id: no notification of yours has this id"}"# }, "\(misses.map(\.text))")
    }
}
