import Foundation

/// Parses and validates spool job files (README "Dropping jobs"). Every problem is reported at once, in
/// document order, so `pushspool validate` and the `failed/` result log list all of them.
///
/// Validation walks the top-level fields in the order written; checks that involve several fields
/// (exactly one audience, a required message) follow at the end. A send job is also rendered for
/// each of its platforms, so a job that parses is a job the engine can send (size limits, reserved
/// keys and bad overrides are caught by `validate`, not half-way through a fan-out).
public enum JobParser {
    /// The top-level fields a job of each kind (`send`, `register`, `unregister`) may have: the
    /// lists the parser takes fields from (any other is "unknown field" or "not allowed in a …
    /// job"), and what the Job file reference is checked against.
    public static let fieldNames: [String: Set<String>] = ["send": Fields.send, "register": Fields.register, "unregister": Fields.unregister]

    /// Parses and validates one spool job file (README "Dropping jobs"). `fileName` (e.g. "x.json") gives the default id.
    public static func parse(_ bytes: [UInt8], fileName: String) throws(JobError) -> Job {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw JobError(JobProblem(field: "", message: error.description))
        }
        guard case .object(let pairs) = document else {
            throw JobError(JobProblem(field: "", message: "a job must be a JSON object, got \(document.typeName)"))
        }
        let file = baseName(fileName)
        var problems = Problems()
        let job: Job?
        switch kind(of: document) {
        case .some("send"):
            job = parseSend(pairs, file: file, problems: &problems)
        case .some("register"):
            job = parseRegister(pairs, file: file, problems: &problems)
        case .some("unregister"):
            job = parseUnregister(pairs, file: file, problems: &problems)
        default:
            // Without a kind we cannot tell which fields belong; report the kind and plain typos only.
            for (key, value) in pairs {
                if key == "kind" {
                    problems.add("kind", "must be \"send\", \"register\" or \"unregister\", got \(describe(value))")
                } else if !Fields.any.contains(key) {
                    Fields.unknown(key, among: Fields.any, problems: &problems)
                }
            }
            job = nil
        }
        guard problems.isEmpty, let job else { throw JobError(problems: problems.items) }
        return job
    }

    /// `kind` as written, `"send"` when absent, `nil` when not a string.
    private static func kind(of document: JSONValue) -> String? {
        guard let value = document["kind"] else { return "send" }
        return value.stringValue
    }

    /// Whether `tag` is a valid tag: `[A-Za-z0-9_@#.:-]{1,120}` (Notification Hubs' tag syntax,
    /// the same rule the tag-expression parser applies).
    public static func isValidTag(_ tag: String) -> Bool { TagExpression.isValidTag(tag) }

    static let tagRule = "1 to 120 of A-Z a-z 0-9 _ @ # . : -"

    /// The last path component: callers may pass `incoming/x.json` as well as `x.json`.
    static func baseName(_ fileName: String) -> String {
        guard let slash = fileName.lastIndex(of: "/") else { return fileName }
        return String(fileName[fileName.index(after: slash)...])
    }

    /// The job id a file name gives when the job has no `id`: the name without `.json`.
    static func defaultID(fileName: String) -> String {
        fileName.hasSuffix(".json") ? String(fileName.dropLast(5)) : fileName
    }

    /// The job id an invalid job file declares, for its result log: its `id` when the file is a
    /// readable JSON object of a send job (register and unregister jobs take their job id from
    /// the file name) whose `id` is a valid job id; nil otherwise (the file name then names it).
    /// A producer waiting for `results/<id>.jsonl` thus hears of its job's failure.
    public static func declaredID(_ bytes: [UInt8]) -> String? {
        guard let document = try? JSONParser.parse(bytes), case .object = document,
              kind(of: document) == "send", let id = document["id"]?.stringValue, Identifier.isValidJobID(id) else { return nil }
        return id
    }

    /// What a dispatcher needs of a job file waiting in `incoming/` before it claims it: one scan
    /// that checks the JSON and builds only `kind`, `id` and `not_before`, no validation or
    /// rendering (that is the run's work, once).
    public struct Peek: Sendable, Equatable {
        /// Whether the file is one whole JSON document (a file being written in place is not yet).
        public var isWholeJSON: Bool
        /// The job id it would run under (its `id`, else the file name), nil when unreadable.
        public var id: String?
        /// A send job's `not_before`, when it reads as an RFC 3339 time.
        public var notBefore: Date?
    }

    public static func peek(_ bytes: [UInt8], fileName: String) -> Peek {
        guard let document = try? JSONParser.members(bytes, named: ["kind", "id", "not_before"]) else { return Peek(isWholeJSON: false) }
        let fileID = defaultID(fileName: baseName(fileName))
        guard case .object = document, kind(of: document) == "send" else {
            return Peek(isWholeJSON: true, id: Identifier.isValidJobID(fileID) ? fileID : nil)
        }
        let id = document["id"].map { $0.stringValue.flatMap { Identifier.isValidJobID($0) ? $0 : nil } } ?? (Identifier.isValidJobID(fileID) ? fileID : nil)
        return Peek(isWholeJSON: true, id: id, notBefore: document["not_before"]?.stringValue.flatMap(RFC3339.date(from:)))
    }

    /// The job id for register/unregister jobs, whose `id` field is the installation id: the job id
    /// then always comes from the file name.
    static func fileNameID(_ file: String, problems: inout Problems) -> String {
        let id = defaultID(fileName: file)
        if !Identifier.isValidJobID(id) {
            problems.add("", "the file name \(quoted(file)) gives no valid job id (expected \(Identifier.jobIDRule) before .json)")
        }
        return id
    }

    /// A value as shown in messages: strings quoted, other types by JSON type name.
    static func describe(_ value: JSONValue) -> String {
        if case .string(let s) = value { return quoted(s) }
        return value.typeName
    }

    /// `"text"`, shortened and escaped (`TerminalText`) so that a huge, multi-line or hostile
    /// value keeps a message on one line.
    static func quoted(_ s: String) -> String {
        "\"" + TerminalText.escaped(s.count > 80 ? String(s.prefix(77)) + "..." : s, quotes: true) + "\""
    }
}

/// The problems found so far, in the order found.
struct Problems {
    var items: [JobProblem] = []

    var isEmpty: Bool { items.isEmpty }

    mutating func add(_ field: String, _ message: String) {
        // Problems are printed one per line and end up in result logs: a key or value written
        // with `\n`, another control character or a bidi override must not break that or drive a terminal.
        let problem = JobProblem(field: TerminalText.escaped(field), message: TerminalText.escaped(message))
        if !items.contains(problem) { items.append(problem) }
    }
}
