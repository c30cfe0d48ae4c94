import Dispatch
import PushspoolCore
import Synchronization

/// A provider whose credentials `config --check` proves by fetching an access token (HMS, ADM):
/// a client id and secret can only be checked by the service that issued them.
public protocol TokenCheck {
    /// Fetches a token now, waiting for it; the problem as one line naming the provider, or nil.
    func tokenProblem() -> String?
}

extension AccessTokenSource {
    /// Waits for a token (`token`); the reason it could not be had, or nil.
    func problemFetching(_ provider: String) -> String? {
        final class Box: Sendable { let problem = Mutex<String??>(nil) }
        let box = Box(), done = DispatchSemaphore(value: 0)
        token { result in
            if case .failure(let e) = result { box.problem.withLock { $0 = .some("providers.\(provider): no access token: \(e.reason)") } } else {
                box.problem.withLock { $0 = .some(nil) }
            }
            done.signal()
        }
        done.wait()
        return box.problem.withLock { $0 } ?? nil
    }
}
