import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Job ids that differ only by case are one id (README "Identifiers"): `Case1` then `case1` is
/// one job and a duplicate, on every disk. On macOS's default case-insensitive disk their result
/// logs would be one file anyway; on Linux's case-sensitive ones the spool makes them one.
///
/// Each job id's key (`Identifier.jobKey`, lower case) has a link `results/.<key>.id` naming the
/// result log of the spelling first given, `<Case1>.jsonl`. The link is made with symlink(2),
/// which fails when the name exists: of two spellings arriving at once, exactly one is first.
/// Everyone who resolves a job id (the runner, the duplicate check, `status`, steering, the
/// front door) gets that one log, whose lock also keeps the two spellings from running at once.
/// A spool written before these links existed has logs without one: a log under the exact
/// spelling is still found, and gets its link the next time that spelling runs.
extension Spool {
    /// The result log of job `jobID`: `results/<id>.jsonl`, `<id>` spelled as it was first given.
    public func resultURL(jobID: String) -> URL { url(.results, "\(firstGivenID(jobID)).jsonl") }

    /// The spelling of `id` whose result log holds its jobs: the first given, else `id` itself.
    public func firstGivenID(_ id: String) -> String {
        let key = Identifier.jobKey(id)
        var buffer = [CChar](repeating: 0, count: 160)
        let n = readlink(keyLinkPath(key), &buffer, buffer.count - 1)
        guard n > 6 else { return id }
        let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Only a plain name of the same key counts: the link cannot point a job elsewhere.
        guard target.hasSuffix(".jsonl") else { return id }
        let spelled = String(target.dropLast(6))
        guard Identifier.isValidJobID(spelled), Identifier.jobKey(spelled) == key else { return id }
        return spelled
    }

    /// Records `id`'s spelling as the one its key's jobs are logged under, unless another
    /// spelling came first; returns the spelling to use. Called before a job's result log is
    /// opened; a log already under the exact spelling (an older spool) keeps it.
    @discardableResult
    public func adoptResultLogName(jobID id: String) -> String {
        let key = Identifier.jobKey(id)
        let first = firstGivenID(id)
        if first != id || access(keyLinkPath(key), F_OK) == 0 { return first }
        if symlink("\(id).jsonl", keyLinkPath(key)) == 0 || errno != EEXIST { return id }
        return firstGivenID(id)
    }

    private func keyLinkPath(_ key: String) -> String { url(.results, ".\(key).id").path }
}
