/// One thing wrong with a job file, located by field path (`pns[1]`, `data.from`, `payload.apns`),
/// or by the empty path when the whole document is at fault (syntax error, missing audience).
public struct JobProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    /// One line, lower-case start, saying what was expected.
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { field.isEmpty ? message : "\(field): \(message)" }
}

/// Every problem found in one job file, in document order, so a sender fixes them all in one go
/// instead of resubmitting once per typo.
public struct JobError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [JobProblem]

    public init(problems: [JobProblem]) { self.problems = problems }

    public init(_ problem: JobProblem) { self.problems = [problem] }

    public var description: String { problems.map(\.description).joined(separator: "; ") }
}
