import Foundation
import PushspoolHTTP
import Synchronization

/// The HTTP clients one provider made (its service's, its token endpoint's), so that its
/// connections can be counted together: `EngineSetup` hands each provider a context whose
/// `makeHTTPClient` notes the client here.
public final class ProviderClients: Sendable {
    private let clients = Mutex<[any HTTPClient]>([])

    public init() {}

    /// `context` with its clients noted here.
    public func noting(_ context: ProviderContext) -> ProviderContext {
        var context = context
        let make = context.makeHTTPClient
        context.makeHTTPClient = { [self] options in
            let client = try make(options)
            clients.withLock { $0.append(client) }
            return client
        }
        return context
    }

    /// Connections open and requests unanswered now, over every client noted.
    public func count() -> HTTPConnectionCount {
        clients.withLock { $0 }.reduce(HTTPConnectionCount(open: 0, inFlight: 0)) { $0 + $1.connections }
    }
}
