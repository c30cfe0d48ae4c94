/// Every problem of one registration, each with its field, in field order.
public struct RegistrationProblems: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [JobProblem]

    public init(_ problems: [JobProblem]) { self.problems = problems }

    public var description: String { problems.map(\.description).joined(separator: "; ") }
}
