import Foundation
import Synchronization
import Testing

/// A network namespace of the test's own, joined to this one by a veth pair (iproute2's `ip`,
/// as root): a server started in it (`exec`) is reached at `inside`, over the pair, and `cut()`
/// takes this end of the pair down, as a partition does: connections made stay open, nothing
/// they send arrives and nothing is refused (measured here: a write succeeds, its answer never
/// comes). Deleted, with the pair, when dropped.
final class NetworkNamespace {
    let name: String
    /// The namespace's address (this side's is the one before it).
    let inside: String
    private let hostEnd: String, innerEnd: String

    private static let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }
    private static let made = Atomic<Int>(0)

    /// A new namespace; the test is cancelled (not failed) where there is no root, no iproute2
    /// or no namespace allowed.
    static func make() throws -> NetworkNamespace {
        guard getuid() == 0, ip != nil else {
            let why = getuid() != 0 ? "not root" : "no ip (iproute2)"
            print("➜ \(Test.current?.name ?? "test") (network namespace) skipped: \(why)")
            try Test.cancel("network namespace tests skipped: \(why)")
        }
        let n = made.add(1, ordering: .relaxed).newValue, id = "\(getpid() % 100_000)x\(n)"
        // A machine that allows no namespace (a container without CAP_SYS_ADMIN) is a limit of
        // the machine, said as a skip; any later step that fails is a failure.
        do {
            try run(ip!, ["netns", "add", "psp\(id)"])
        } catch {
            print("➜ \(Test.current?.name ?? "test") (network namespace) skipped: \(error)")
            try Test.cancel("network namespace tests skipped: \(error)")
        }
        do {
            return try NetworkNamespace(id: id, n: n)
        } catch {
            _ = try? run(ip!, ["netns", "del", "psp\(id)"])
            throw error
        }
    }

    private init(id: String, n: Int) throws {
        name = "psp\(id)"
        hostEnd = "pso\(id)"
        innerEnd = "psi\(id)"
        // 198.18.0.0/15 is kept for benchmark networks (RFC 2544): no real network uses it.
        let net = "198.\(18 + getpid() % 2).\(getpid() / 2 % 256)", low = 4 * (n % 64)
        let outside = "\(net).\(low + 1)"
        inside = "\(net).\(low + 2)"
        try Self.run(Self.ip!, ["link", "add", hostEnd, "type", "veth", "peer", "name", innerEnd])
        try Self.run(Self.ip!, ["link", "set", innerEnd, "netns", name])
        try Self.run(Self.ip!, ["addr", "add", "\(outside)/30", "dev", hostEnd])
        try Self.run(Self.ip!, ["link", "set", hostEnd, "up"])
        for step in [["addr", "add", "\(inside)/30", "dev", innerEnd], ["link", "set", innerEnd, "up"], ["link", "set", "lo", "up"]] {
            try Self.run(Self.ip!, ["netns", "exec", name, Self.ip!] + step)
        }
    }

    deinit { _ = try? Self.run(Self.ip!, ["netns", "del", name]) }

    /// What runs a program in the namespace (a `FakeServer`'s launcher).
    var exec: [String] { [Self.ip!, "netns", "exec", name] }

    /// Nothing goes between the two sides from now on.
    func cut() throws { try Self.run(Self.ip!, ["link", "set", hostEnd, "down"]) }

    /// Packets go through again (the connections cut off may have given up meanwhile).
    func heal() throws { try Self.run(Self.ip!, ["link", "set", hostEnd, "up"]) }

    struct Failure: Error, CustomStringConvertible { var description: String }

    @discardableResult
    private static func run(_ tool: String, _ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw Failure(description: "\(tool) \(args.joined(separator: " ")) exited \(p.terminationStatus): \(text)")
        }
        return text
    }
}
