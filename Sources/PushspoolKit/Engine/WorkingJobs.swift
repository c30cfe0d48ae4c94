import PushspoolCore
import Synchronization

/// Job file names being run here, with their job ids: a second file with the id of a job running
/// here waits for it to end (`.waiting`) instead of being left as another's.
final class WorkingJobs: Sendable {
    private let files = Mutex<[String: String]>([:])

    func begin(_ name: String, id: String) { files.withLock { $0[name] = id } }

    func end(_ name: String) { files.withLock { $0[name] = nil } }

    /// Whether a job file other than `name` with the id `id` is being run here.
    func isWorking(on id: String, besides name: String) -> Bool {
        let key = Identifier.jobKey(id)   // spellings that differ only by case are one id
        return files.withLock { $0.contains { $0.key != name && Identifier.jobKey($0.value) == key } }
    }
}
