import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The owner recorded with a job id claimed in a shared registry: this host's name, the spool's
/// path and the spool's own random identity (`.state/spool-id`, made once). The same spool
/// resuming the job (after a crash, a restart, a lost database connection) is the same owner; a
/// copy of the job on another host's spool is not, even on hosts cloned with the same name and
/// the same spool path.
enum JobClaimOwner {
    static func current(spool: Spool) -> String {
        "\(hostName) \(spool.root.standardizedFileURL.path) \(spoolID(spool) ?? "-")"
    }

    /// The spool's identity, created on first use. Two processes starting together on a new
    /// spool agree on one: each writes its id whole under a temporary name and renames it into
    /// place only where no file is (`DurableFile`, `neverReplacing`); the one that finds a file
    /// there reads the other's, already complete. There is nothing to wait for: the file never
    /// exists half-written.
    static func spoolID(_ spool: Spool) -> String? {
        let url = spool.stateDirectory.appendingPathComponent("spool-id")
        if let existing = read(url) { return existing }
        try? FileManager.default.createDirectory(at: spool.stateDirectory, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        let id = UUID().uuidString.lowercased()
        let placed = DurableFile().write([DurableFile.Item(bytes: Array((id + "\n").utf8), temporary: DurableFile.temporary(for: url),
                                                           destination: url)],
                                         mode: 0o600, placement: .neverReplacing).files[0]
        if case .renamed = placed { return id }
        return read(url)
    }

    private static func read(_ url: URL) -> String? {
        guard let bytes = try? FileIO.readAll(url, limit: 4096) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.count == 36 ? text : nil
    }

    static var hostName: String { HostName.current }
}
