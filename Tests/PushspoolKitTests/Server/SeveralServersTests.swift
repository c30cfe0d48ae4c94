import Dispatch
import Foundation
import Testing

/// Several `serve` processes: two on one spool (each job id queued once, whichever answers), and
/// two hosts with spools of their own behind a load balancer, sharing a PostgreSQL registry (an id
/// handed out by one is registered through the other).
@Suite(.serialized) struct SeveralServersTests {
    @Test func twoServersOnOneSpoolQueueEachIDOnce() throws {
        let f = try SandboxFrontDoor()
        let second = try ServeProcess(config: f.dir.path("pushspool.json"), cwd: f.dir.url)
        let ports = [f.serve.port, second.port]
        let created = LockedCounter(), existing = LockedCounter(), other = LockedCounter()
        // 8 clients post the same 25 ids, alternating servers.
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            guard let c = try? RawHTTPClient(port: ports[i % 2]) else { return other.add() }
            for n in 0..<25 {
                let body = #"{"id": "shared-\#(n)", "broadcast": true, "pns": "fcm", "message": "m"}"#
                switch (try? c.request("POST", "/v1/jobs", headers: JobAPITests.auth, body: body))?.status {
                case 202: created.add()
                case 200: existing.add()
                default: other.add()
                }
            }
        }
        #expect(created.value == 25 && existing.value == 175 && other.value == 0)
        #expect(f.dir.list("spool/incoming").count == 25 && f.dir.list("spool/tmp").isEmpty)
    }

    @Test(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
    func twoHostsBehindALoadBalancerShareHandedOutIDs() throws {
        let cluster = try PostgresCluster.shared.get()
        let uri = try cluster.createDatabase("serve")
        let dir = TempDir("pushspool-serve-hosts")
        FrontDoorFiles.write(into: dir)
        var hosts: [ServeProcess] = []
        for host in ["a", "b"] {
            dir.write("\(host).json", #"{"spool": "\#(host)", "registry": "env:PUSHSPOOL_TEST_REGISTRY", \#(FrontDoorFiles.section())}"#)
            let made = try runPushspool(["init", "--config", dir.path("\(host).json")], cwd: dir.url, env: ["PUSHSPOOL_TEST_REGISTRY": uri])
            #expect(made.status == 0, "\(made.stderr)")
            hosts.append(try ServeProcess(config: dir.path("\(host).json"), cwd: dir.url, env: ["PUSHSPOOL_TEST_REGISTRY": uri]))
        }
        let handle = String(repeating: "e4", count: 32)
        let alice = [("Authorization", FrontDoorFiles.basic("alice"))]
        // The id from host a, the registration through host b, a second device's id from b used on a.
        let id = try #require(try hosts[0].client().request("POST", "/api/register?handle=\(handle)", headers: alice).json as? String)
        let put = try hosts[1].client().request("PUT", "/api/register/\(id)", headers: alice,
                                                body: #"{"Platform": "apns", "Handle": "\#(handle)", "Tags": []}"#)
        #expect(put.status == 200, "\(put.text)")
        #expect(try hosts[0].client().request("POST", "/api/register?handle=\(handle)", headers: alice).json as? String == id)
        // Bob cannot take alice's device on either host.
        let bob = [("Authorization", FrontDoorFiles.basic("bob"))]
        #expect(try hosts[0].client().request("DELETE", "/api/register/\(id)", headers: bob).status == 404)
        #expect(try hosts[1].client().request("DELETE", "/api/register/\(id)", headers: alice).status == 200)
        #expect(try hosts[0].client().request("PUT", "/api/register/\(id)", headers: alice,
                                              body: #"{"Platform": "apns", "Handle": "\#(handle)", "Tags": []}"#).status == 410)
    }
}
