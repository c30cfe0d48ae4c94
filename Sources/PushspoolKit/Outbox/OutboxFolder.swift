import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The spool side of an outbox (`SpoolOutbox`): its records in `<root>/pending/`, each written
/// whole with the one durable write (`DurableFile`) from a temporary kept out of `pending/`, so
/// a scan of it never sees half a record; and, for an outbox that gives records up,
/// `<root>/failed/`, where they are kept for the operator. The hub queue keeps one record per
/// installation (`hub/`), the webhooks one batch of events per file (`webhooks/`).
struct OutboxFolder: Sendable {
    let root: URL
    let pending: URL
    /// Where records given up are kept (nil: this outbox never gives one up).
    let failed: URL?
    /// Where a record is written before its rename into `pending/` (the same file system).
    let temporaries: URL

    /// Creates the folders (`permissions`: their mode; nil: the process's default).
    init(root: URL, temporaries: URL? = nil, keepsFailed: Bool, permissions: Int? = nil) throws {
        self.root = root
        pending = root.appendingPathComponent("pending")
        failed = keepsFailed ? root.appendingPathComponent("failed") : nil
        self.temporaries = temporaries ?? root
        let attributes: [FileAttributeKey: Any] = permissions.map { [.posixPermissions: $0] } ?? [:]
        for dir in [root, pending, self.temporaries] + (failed.map { [$0] } ?? []) {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: attributes)
        }
    }

    func url(_ name: String) -> URL { pending.appendingPathComponent(name) }

    /// Writes record `name` whole into `pending/` (replacing one of that name), durably.
    func write(_ bytes: [UInt8], name: String, mode: mode_t) throws(FileIO.Failure) {
        let destination = url(name)
        try DurableFile().write(bytes, to: destination, temporary: DurableFile.temporary(for: destination, in: temporaries), mode: mode)
    }

    /// The records in `pending/` (no hidden file), in name order.
    func names(suffix: String = "") -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: pending.path)) ?? [])
            .filter { !$0.hasPrefix(".") && $0.hasSuffix(suffix) }.sorted()
    }

    /// Record `name` is done with.
    func remove(_ name: String) { unlink(url(name).path) }

    /// Adds `bytes` to `failed/<name>` (created if need be) and fsyncs it; throws why it could not.
    func keepFailed(_ bytes: [UInt8], name: String, mode: mode_t) throws(FileIO.Failure) {
        guard let failed else { throw FileIO.Failure(description: "this outbox keeps no failed records") }
        let path = failed.appendingPathComponent(name).path
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileIO.Failure(description: "\(path): \(FileIO.errnoText())") }
        defer { close(fd) }
        do { try FileIO.writeAll(fd, bytes) } catch { throw FileIO.Failure(description: "\(path): \(error)") }
        if fsync(fd) != 0 { throw FileIO.Failure(description: "\(path): fsync: \(FileIO.errnoText())") }
    }
}
