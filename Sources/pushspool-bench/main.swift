// pushspool-bench apns --count N --concurrency C
//
// Sends N notifications through `pushspool run --once` to the local fake APNs (Tests/Fakes/apns.js),
// then the same N through Node's own http2 client (one session, C streams in flight) to a fresh
// instance of the same fake, and prints both rates and their ratio. The pushspool figure is the
// whole pipeline: process start, registry scan, JWT, HTTP/2, result log.
import Foundation
import PushspoolHTTP
import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

func option(_ name: String, default value: Int) -> Int {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: "--\(name)"), i + 1 < args.count, let n = Int(args[i + 1]), n > 0 else { return value }
    return n
}

let args = CommandLine.arguments
guard args.count >= 2, args[1] == "apns" else {
    print("usage: pushspool-bench apns [--count N] [--concurrency C] [--runs R]")
    exit(64)
}
let count = option("count", default: 20_000)
let concurrency = option("concurrency", default: 256)
let runs = option("runs", default: 1)
let payload = #"{"aps":{"alert":"From bench: hello"}}"#

func run() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: dir) }
    let key = dir.appendingPathComponent("AuthKey_TESTKEY123.p8")
    try FileManager.default.copyItem(at: BenchPaths.fixtures.appendingPathComponent("AuthKey_TESTKEY123.p8"), to: key)
    chmod(key.path, 0o600)
    let ca = BenchPaths.fixtures.appendingPathComponent("ca.pem").path
    let binary = BenchPaths.binary.path
    guard FileManager.default.isExecutableFile(atPath: binary) else { throw BenchError(description: "no pushspool at \(binary): run `swift build -c release` first") }

    // pushspool
    let fake = try BenchFake(dir: dir, name: "fake-pushspool")
    let config = dir.appendingPathComponent("pushspool.json")
    let spool = dir.appendingPathComponent("spool").path
    try """
    {"spool": "spool", "concurrency": \(concurrency), "routes": {"apns": "apns"},
     "providers": {"apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
                            "topic": "com.example.app", "environment": "production", "endpoint": "https://127.0.0.1:\(fake.port)"}},
     "tls": {"ca_file": "\(ca)"}}
    """.write(to: config, atomically: true, encoding: .utf8)
    var devices = ""
    for i in 0..<count { devices += #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["bench"]}"# + "\n" }
    let devicesFile = dir.appendingPathComponent("devices.jsonl")
    try devices.write(to: devicesFile, atomically: true, encoding: .utf8)
    let common = ["--spool", spool, "--config", config.path]
    let imported = try measure(binary, ["import"] + common + [devicesFile.path])
    guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
    let submitted = try measure(binary, ["submit"] + common + ["--to-tag", "bench", "--pns", "apns", "--message", "hello", "--from", "bench", "--id", "bench"])
    guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
    let fakeCPU0 = fake.cpuSeconds
    let ours = try measure(binary, ["run", "--once"] + common)
    let ourState = fake.settledState(expecting: count)
    let ourFakeCPU = fake.cpuSeconds - fakeCPU0
    fake.stop()
    guard ours.status == 0 else { throw BenchError(description: "pushspool run failed (\(ours.status)): \(ours.stderr)") }

    // Node http2 peer, same fake code, fresh instance
    let peerFake = try BenchFake(dir: dir, name: "fake-peer")
    let peerFakeCPU0 = peerFake.cpuSeconds
    let peer = try measure("/usr/bin/env", ["node", BenchPaths.peer.path, "--port", String(peerFake.port),
                                            "--count", String(count), "--concurrency", String(concurrency),
                                            "--ca", ca, "--key", key.path, "--team-id", "TEAMID1234", "--key-id", "TESTKEY123",
                                            "--topic", "com.example.app", "--payload", payload])
    let peerState = peerFake.settledState(expecting: count)
    let peerFakeCPU = peerFake.cpuSeconds - peerFakeCPU0
    peerFake.stop()
    let peerResult = (try? JSONSerialization.jsonObject(with: Data(peer.stdout.utf8)) as? [String: Any]) ?? [:]

    let ourRate = Double(count) / ours.seconds
    let peerRate = Double(count) / peer.seconds
    func row(_ name: String, _ m: Measured, _ rate: Double, _ s: [String: Any], _ fakeCPU: Double) -> String {
        let delivered = s["tokensDelivered"] as? Int ?? -1
        let dup = s["duplicateDeliveries"] as? Int ?? -1
        let conns = s["tlsConnections"] as? Int ?? -1
        return String(format: "%-22@ %8.0f req/s  %6.2f s wall  %5.2f s CPU (%3.0f µs/req)  fake CPU %5.2f s  delivered %d  dup %d  TLS conns %d",
                      name as NSString, rate, m.seconds, m.cpuSeconds, m.cpuSeconds / Double(count) * 1e6, fakeCPU, delivered, dup, conns)
    }
    print("N = \(count), concurrency = \(concurrency), libcurl \(String(format: "%06x", CurlHTTPClient.libcurlVersionNum))")
    print(row("pushspool run --once", ours, ourRate, ourState, ourFakeCPU))
    print(row("node http2 peer", peer, peerRate, peerState, peerFakeCPU))
    if (peerResult["failed"] as? Int ?? 0) > 0 { print("  (peer reported \(peerResult["failed"]!) failures)") }
    print(String(format: "ratio pushspool / node = %.2f×", ourRate / peerRate))
}

for _ in 0..<runs {
    do { try run() } catch {
        FileHandle.standardError.write(Data("pushspool-bench: \(error)\n".utf8))
        exit(1)
    }
}
