import CLibpq
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#endif

extension PostgresConnection {
    /// Connects to `uri` and hangs up, within `timeout` seconds: nil when the server accepted
    /// the connection (and its authentication), else why not, its password masked.
    ///
    /// Non-blocking (`PQconnectStartParams` + `PQconnectPoll` + `poll`), because libpq's own
    /// `connect_timeout` counts whole seconds and treats anything under 2 s as 2 s, and `status`
    /// must answer within half a second with the database down or not answering.
    static func probe(uri: String, timeout: Double) -> String? {
        let deadline = Uptime.seconds + timeout
        let keys = ["application_name", "dbname"]
        let values = ["pushspool", uri]
        let handle: OpaquePointer? = withCStrings(keys) { k in
            withCStrings(values) { v in PQconnectStartParams(k, v, 1) }
        }
        guard let handle else { return "cannot allocate a PostgreSQL connection" }
        defer { PQfinish(handle) }
        var polling = PGRES_POLLING_WRITING
        while true {
            if PQstatus(handle) == CONNECTION_BAD { return failure(handle, uri) }
            switch polling {
            case PGRES_POLLING_OK: return nil
            case PGRES_POLLING_FAILED: return failure(handle, uri)
            default: break
            }
            let remaining = deadline - Uptime.seconds
            guard remaining > 0 else { return "no answer within \(Self.seconds(timeout))" }
            var pfd = pollfd(fd: PQsocket(handle), events: Int16(polling == PGRES_POLLING_READING ? POLLIN : POLLOUT), revents: 0)
            let ready = poll(&pfd, 1, Int32((remaining * 1000).rounded(.up)))
            if ready == 0 { return "no answer within \(Self.seconds(timeout))" }
            if ready < 0, errno != EINTR { return "poll: \(String(cString: strerror(errno)))" }
            polling = PQconnectPoll(handle)
        }
    }

    private static func failure(_ handle: OpaquePointer, _ uri: String) -> String {
        var message = trimmed(PQerrorMessage(handle))
        for password in Redaction.passwords(inConnectionString: uri) {
            message = message.replacingOccurrences(of: password, with: Redaction.mask)
        }
        return Redaction.scrub(message.isEmpty ? "the connection failed" : message)
    }

    private static func seconds(_ s: Double) -> String { s < 1 ? "\(Int((s * 1000).rounded())) ms" : "\(s) s" }
}
