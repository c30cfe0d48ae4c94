import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// A provider whose answers come from a script, recording every request: the test double for
/// engine tests. Answers asynchronously on a concurrent queue, like a real transport.
public final class ScriptedProvider: PushProvider {
    public let name: String
    public let resolvesTags: Bool
    private let script: @Sendable (SendRequest) -> ProviderResult
    private let delay: Double
    private let queue = DispatchQueue(label: "pushspool.scripted", attributes: .concurrent)
    private struct State { var requests: [SendRequest] = []; var inFlight = 0; var maxInFlight = 0; var answered = 0; var shutdown = false }
    private let state = Mutex(State())

    /// `script` decides each attempt's result; `delay` seconds of simulated latency.
    public init(name: String = "scripted", resolvesTags: Bool = false, delay: Double = 0,
                script: @escaping @Sendable (SendRequest) -> ProviderResult = { _ in ProviderResult(.delivered, code: "200") }) {
        self.name = name
        self.resolvesTags = resolvesTags
        self.delay = delay
        self.script = script
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        state.withLock { s in
            s.requests.append(request)
            s.inFlight += 1
            s.maxInFlight = max(s.maxInFlight, s.inFlight)
        }
        let answer: @Sendable () -> Void = { [self] in
            let result = script(request)
            state.withLock { $0.inFlight -= 1 }
            completion(result)
            state.withLock { $0.answered += 1 }
        }
        if delay > 0 { queue.asyncAfter(deadline: .now() + delay, execute: answer) } else { queue.async(execute: answer) }
    }

    public func shutdown() { state.withLock { $0.shutdown = true } }

    /// Every attempt so far, in arrival order.
    public var requests: [SendRequest] { state.withLock { $0.requests } }
    /// Answers whose completion has returned (whatever the caller did with them).
    public var answered: Int { state.withLock { $0.answered } }
    /// The most attempts that were in flight at once.
    public var maxInFlight: Int { state.withLock { $0.maxInFlight } }
    public var isShutDown: Bool { state.withLock { $0.shutdown } }

    /// Attempts per recipient key (`platform|device` or `platform|hub`).
    public var attemptsByRecipient: [String: Int] {
        var out: [String: Int] = [:]
        for r in requests { out[Self.key(platform: r.platform, recipient: r.recipient), default: 0] += 1 }
        return out
    }

    /// `platform|device`, or `platform|hub|<tags>` for a hub route.
    public static func key(platform: Platform, recipient: Recipient) -> String {
        switch recipient {
        case .device(let d): return "\(platform.rawValue)|\(d.id)"
        case .hub(let audience): return "\(platform.rawValue)|hub|\(audience.hubTags ?? "")"
        }
    }
}
