import PushspoolKit
import Foundation
import Synchronization

/// A credential file kept current while `serve` runs, so an operator can add or remove a user
/// or token without a restart. At most once a second a caller `stat`s the file; a new inode,
/// size or modification time makes it re-read and re-parsed.
///
/// A file that is gone revokes everyone in it: the set is empty, logged once, until the file is
/// back (deleting the tokens file is how an operator would lock every service out at once). A
/// file that is there but cannot be used (permissions changed, readable by others) keeps the
/// last good copy in force and is logged once, until it reads again: a half-finished edit must
/// not lock every client out. (An editor that writes a new file and renames it over the old one
/// never leaves the name missing.) Lines the parser refuses are logged once per version of the file and
/// left out (a removed or changed user takes effect even if another line has a mistake).
final class WatchedCredentialFile<Content: Sendable>: Sendable {
    private struct State {
        var content: Content
        var version: FileIO.Version
        var checked: Double
        var failing = false
        var gone = false
    }

    let url: URL
    /// The config key, for log lines: `http.users_file`.
    let key: String
    private let parse: @Sendable ([UInt8]) -> (Content, problems: [String])
    private let log: Log
    private let state: Mutex<State>
    /// What an empty file parses to: the set in force while the file is gone.
    private let empty: Content
    /// The lines refused when the file was first read, each naming the key and path.
    let initialProblems: [String]

    /// Reads the file now; a file that cannot be read is an error here (start-up), and so are
    /// refused lines (`initialProblems`, for the caller to report).
    init(url: URL, key: String, now: Double, log: Log,
         parse: @escaping @Sendable ([UInt8]) -> (Content, problems: [String])) throws(CredentialFile.Problem) {
        self.url = url
        self.key = key
        self.parse = parse
        self.log = log
        let contents = try CredentialFile.read(url, key: key)
        let (content, problems) = parse(contents.bytes)
        initialProblems = problems.map { "\(key): \(url.path) \($0)" }
        state = Mutex(State(content: content, version: contents.version, checked: now))
        empty = parse([]).0
    }

    /// The content in force, re-read first if the file changed (checked at most once a second).
    func current(now: Double) -> Content {
        state.withLock { s in
            guard now - s.checked >= 1 || now < s.checked else { return s.content }
            s.checked = now
            if let v = FileIO.version(url.path), v == s.version { return s.content }
            do throws(CredentialFile.Problem) {
                let contents = try CredentialFile.read(url, key: key)
                let (content, problems) = parse(contents.bytes)
                for p in problems { log.warning("\(key): \(url.path) \(p); the line is ignored") }
                if s.failing || s.gone { log.info("\(key): \(url.path) reads again") }
                s = State(content: content, version: contents.version, checked: now)
            } catch let error where error.missing {
                if !s.gone { log.warning("\(error): everyone it named is refused until it is back") }
                s.content = empty
                s.gone = true
                s.failing = false
            } catch {
                if !s.failing && !s.gone { log.warning("\(error); keeping the copy read last") }
                s.failing = true
            }
            return s.content
        }
    }
}
