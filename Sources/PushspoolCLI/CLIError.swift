import PushspoolKit

/// A CLI failure: a message for stderr and the exit code.
struct CLIError: Error, CustomStringConvertible {
    var code: ExitCode
    var description: String
    init(_ code: ExitCode, _ message: String) {
        self.code = code
        // Error messages can quote a connection string or a provider's answer: masked here,
        // before anything prints them.
        self.description = Redaction.scrub(message)
    }
}

extension CLIError {
    /// The engine's setup problems: configuration ones exit 78, the rest 74.
    init(_ error: EngineSetupError) {
        self.init(error.kind == .config ? .config : .ioError, error.description)
    }
}
