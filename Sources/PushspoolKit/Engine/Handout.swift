import PushspoolCore
import Synchronization

/// What a send job's producer has handed out since its last wait and not yet written: requests
/// to providers that answer at once (`ImmediateProvider`, the sandbox) and outcomes the
/// producer reached itself (a device over its frequency cap). The producer owns it and calls
/// `release` before it waits for anything (a free slot, a provider's quiet time, a rate cap, its
/// pacing, a cap reservation) and once it is done: each provider then gets its requests in one
/// call (one write of the outbox), and every answer is recorded with one write of the result
/// log, on the producer's own thread. A held target keeps its worker-pool slot until then, which
/// is why nothing may wait before a `release`.
///
/// Why hold at all: answering each sandbox request as it is made hands every outcome to the
/// recorder's queue alone, a wake-up per target, and that doubled the CPU of a sandbox broadcast.
final class Handout: Sendable {
    private struct Call {
        let provider: any ImmediateProvider
        var prepared: [PreparedSend] = []
        var answers: [@Sendable (ProviderResult) -> Void] = []
    }
    private struct Held {
        var calls: [Call] = []
        var outcomes: [OutcomeRecorder.Entry] = []
        var isEmpty: Bool { calls.isEmpty && outcomes.isEmpty }
    }
    /// Only the producer adds and releases; the lock makes that plain to the compiler.
    private let held = Mutex(Held())
    private let recorder: OutcomeRecorder

    init(recorder: OutcomeRecorder) {
        self.recorder = recorder
    }

    /// Holds `request` for `provider` (as the provider prepared it) until the next `release`,
    /// which calls `answer` with its answer.
    func send(_ request: SendRequest, to provider: any ImmediateProvider, answer: @escaping @Sendable (ProviderResult) -> Void) {
        send(provider.prepare(request), to: provider, answer: answer)
    }

    func send(_ prepared: PreparedSend, to provider: any ImmediateProvider, answer: @escaping @Sendable (ProviderResult) -> Void) {
        held.withLock { h in
            if let i = h.calls.firstIndex(where: { $0.provider === provider }) {
                h.calls[i].prepared.append(prepared)
                h.calls[i].answers.append(answer)
            } else {
                h.calls.append(Call(provider: provider, prepared: [prepared], answers: [answer]))
            }
        }
    }

    /// Holds an outcome for the next `release`.
    func record(_ entry: OutcomeRecorder.Entry) {
        held.withLock { $0.outcomes.append(entry) }
    }

    /// Sends what is held and records every answer (and the outcomes held) with one write; their
    /// slots are free when it returns, unless a drain of the recorder running on another thread
    /// took them (it frees them as it writes).
    func release() {
        let taken = held.withLock { h -> Held? in
            if h.isEmpty { return nil }
            var taken = Held()
            swap(&taken, &h)
            return taken
        }
        guard let taken else { return }
        recorder.together {
            for call in taken.calls {
                let results = call.provider.send(prepared: call.prepared)
                for (answer, result) in zip(call.answers, results) { answer(result) }
            }
            for entry in taken.outcomes { recorder.record(entry) }
        }
    }
}
