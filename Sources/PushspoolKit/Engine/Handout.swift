import PushspoolCore
import Synchronization

/// What a send job's producer has handed out since its last wait and not yet written: requests
/// to providers that answer at once (`ImmediateProvider`, the sandbox), outcomes the producer
/// reached itself (a device over its frequency cap), and batches it is filling for a provider
/// whose requests carry many targets (`BatchingProvider`, HMS: a full batch leaves at once, the
/// others at `release`). The producer owns it and calls
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
    /// A batch being filled: its targets' requests and answers, and their members.
    private struct Filling {
        let batch: HandoutBatch
        var requests: [SendRequest] = []
        var answers: [@Sendable (ProviderResult) -> Void] = []
        var members: Set<String> = []

        /// Sends it (its slot is free once its targets have ended).
        func send() {
            batch.provider.send(batch: requests, answers: answers)
            batch.leave()
        }
    }
    private struct Held {
        var calls: [Call] = []
        var outcomes: [OutcomeRecorder.Entry] = []
        var batches: [HandoutBatch.ID: Filling] = [:]
        var isEmpty: Bool { calls.isEmpty && outcomes.isEmpty && batches.isEmpty }
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

    /// The batch `key` may join, open for `provider`; nil when none is (open one with `open`).
    /// A batch that holds `key.member` already leaves now: a member twice in one request would be
    /// sent twice.
    func batch(for provider: any BatchingProvider, key: BatchKey) -> HandoutBatch? {
        let id = HandoutBatch.ID(provider: ObjectIdentifier(provider), message: key.message)
        let (open, full) = held.withLock { h -> (HandoutBatch?, Filling?) in
            guard let filling = h.batches[id] else { return (nil, nil) }
            if !filling.members.contains(key.member) { return (filling.batch, nil) }
            h.batches[id] = nil
            return (nil, filling)
        }
        full?.send()
        return open
    }

    /// Opens a batch for `key`'s message, holding the slot `free` gives back.
    func open(for provider: any BatchingProvider, key: BatchKey, free: @escaping @Sendable () -> Void) -> HandoutBatch {
        let batch = HandoutBatch(provider: provider, message: key.message, free: free)
        held.withLock { $0.batches[batch.id] = Filling(batch: batch) }
        return batch
    }

    /// Adds `request` (which joined `batch`) to it; a batch now full leaves at once.
    func add(_ request: SendRequest, member: String, to batch: HandoutBatch, answer: @escaping @Sendable (ProviderResult) -> Void) {
        let (added, full) = held.withLock { h -> (Bool, Filling?) in
            // Taken out of the table while it grows: a copy left there would share the arrays,
            // and each append would copy the whole batch (quadratic in its 1,000 targets).
            guard var filling = h.batches.removeValue(forKey: batch.id) else { return (false, nil) }
            guard filling.batch === batch else {
                h.batches[batch.id] = filling
                return (false, nil)
            }
            filling.requests.append(request)
            filling.answers.append(answer)
            filling.members.insert(member)
            if filling.requests.count >= batch.provider.maxBatch { return (true, filling) }
            h.batches[batch.id] = filling
            return (true, nil)
        }
        full?.send()
        // The batch left meanwhile (it cannot while its producer adds, but then it goes alone).
        if !added { batch.provider.send(request, completion: answer) }
    }

    /// Holds an outcome for the next `release`.
    func record(_ entry: OutcomeRecorder.Entry) {
        held.withLock { $0.outcomes.append(entry) }
    }

    /// Sends what is held and records every answer (and the outcomes held) with one write; their
    /// slots are free when it returns, unless a drain of the recorder running on another thread
    /// took them (it frees them as it writes). The batches filling leave as they are: their
    /// answers come back later, through the recorder's queue.
    func release() {
        let taken = held.withLock { h -> Held? in
            if h.isEmpty { return nil }
            var taken = Held()
            swap(&taken, &h)
            return taken
        }
        guard let taken else { return }
        if !taken.calls.isEmpty || !taken.outcomes.isEmpty { recorder.together {
            for call in taken.calls {
                let results = call.provider.send(prepared: call.prepared)
                for (answer, result) in zip(call.answers, results) { answer(result) }
            }
            for entry in taken.outcomes { recorder.record(entry) }
        } }
        for filling in taken.batches.values { filling.send() }
    }
}
