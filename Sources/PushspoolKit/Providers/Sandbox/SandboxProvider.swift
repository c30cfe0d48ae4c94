import Foundation
import PushspoolCore
import Synchronization

/// The zero-credential provider: "delivers" by appending each rendered notification as one JSON
/// line to `<outbox>/<platform>.jsonl`, so a user sees exactly what would go to each service.
public final class SandboxProvider: PushProvider {
    public let name = "sandbox"
    private let outbox: URL
    private let files = Mutex<[Platform: FileHandle]>([:])

    /// The outbox folder is created on the first delivery (`config --check` creates nothing).
    public init(outbox: URL) {
        self.outbox = outbox
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        let line = Self.outboxLine(request, at: Date())
        do {
            try files.withLock { files in
                let handle: FileHandle
                if let h = files[request.platform] {
                    handle = h
                } else {
                    try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true,
                                                            attributes: [.posixPermissions: 0o750])
                    let url = outbox.appendingPathComponent("\(request.platform.rawValue).jsonl")
                    if !FileManager.default.fileExists(atPath: url.path) {
                        _ = FileManager.default.createFile(atPath: url.path, contents: nil,
                                                       attributes: [.posixPermissions: 0o640])
                    }
                    handle = try FileHandle(forWritingTo: url)
                    try handle.seekToEnd()
                    files[request.platform] = handle
                }
                try handle.write(contentsOf: line)
            }
            completion(ProviderResult(.delivered, code: "200", providerID: "sandbox-\(UUID().uuidString.lowercased())"))
        } catch {
            // A full disk or unwritable outbox is transient from the job's point of view.
            completion(ProviderResult(.retry(after: nil), code: "io", reason: "outbox write failed: \(error)"))
        }
    }

    public func shutdown() {
        files.withLock { files in
            for h in files.values { try? h.close() }
            files.removeAll()
        }
    }

    /// One outbox line: job, platform, recipient (device id or hub tags), the native headers and
    /// the payload exactly as the service would receive it (JSON inline, XML as a string).
    static func outboxLine(_ r: SendRequest, at date: Date) -> Data {
        var pairs: [(String, JSONValue)] = [("job", .string(r.jobID)), ("platform", .string(r.platform.rawValue))]
        switch r.recipient {
        case .device(let d): pairs.append(("device", .string(d.id)))
        case .hub(let a): pairs.append(("tags", a.hubTags.map(JSONValue.string) ?? .null))
        }
        var headers: [(String, JSONValue)] = []
        let payload: JSONValue
        switch r.notification {
        case .apns(let n):
            headers.append(("apns-push-type", .string(n.pushType)))
            headers.append(("apns-priority", .string(String(n.priority))))
            if let ttl = n.ttlSeconds { headers.append(("apns-expiration", .string(String(Int(date.timeIntervalSince1970) + ttl)))) }
            if let c = n.collapseID { headers.append(("apns-collapse-id", .string(c))) }
            payload = (try? JSONParser.parse(n.payload)) ?? .string(String(decoding: n.payload, as: UTF8.self))
        case .fcm(let n):
            payload = .object([("message", n.message)])
        case .wns(let n):
            headers.append(("X-WNS-Type", .string(n.type)))
            headers.append(("Content-Type", .string(n.contentType)))
            if let ttl = n.ttlSeconds { headers.append(("X-WNS-TTL", .string(String(ttl)))) }
            payload = .string(String(decoding: n.body, as: UTF8.self))
        }
        pairs.append(("headers", .object(headers)))
        pairs.append(("payload", payload))
        pairs.append(("at", .string(Timestamp.rfc3339(date))))
        var bytes = JSONValue.object(pairs).encoded()
        bytes.append(0x0A)
        return Data(bytes)
    }
}
