import PushspoolCore

extension Registration {
    /// Handles longer than this are refused: APNs tokens are 64–200 hex digits, FCM tokens a few
    /// hundred characters and WNS channel URIs stay well under 2 KiB.
    static let maxHandleLength = 4096

    /// The first problem with this registration as `(field, message)`, or nil when it is valid:
    /// the registry's own last check, for callers that build a `Registration` themselves (entry
    /// points check everything with `RegistrationRules` first; the id rule is the same one).
    /// Tags must be hub-syntax tags (`TagExpression.isValidTag`): anything else could never be
    /// selected by a tag expression and would sit in the registry unreachable.
    func problem() -> (field: String, message: String)? {
        if let id, let problem = Identifier.deviceIDProblem(id) { return ("id", problem) }
        if handle.isEmpty { return ("handle", "must not be empty") }
        if handle.utf8.count > Self.maxHandleLength {
            return ("handle", "longer than \(Self.maxHandleLength) bytes")
        }
        if Self.hasSpaceOrControl(handle) {
            return ("handle", "contains whitespace or a control character")
        }
        for (i, tag) in tags.enumerated() {
            if let problem = RegistrationRules.tagProblem(tag) { return ("tags[\(i)]", problem) }
        }
        return nil
    }

    /// Handles are ASCII in practice, so check bytes first and consult Unicode properties only
    /// when there is something non-ASCII (this runs once per line of a million-line import).
    private static func hasSpaceOrControl(_ s: String) -> Bool {
        var ascii = true
        for b in s.utf8 {
            if b <= 0x20 || b == 0x7F { return true }
            if b >= 0x80 { ascii = false }
        }
        if ascii { return false }
        return s.unicodeScalars.contains { $0.properties.isWhitespace || $0.properties.generalCategory == .control }
    }
}
