/// A config value given as `env:NAME` whose environment variable is not set, let through because
/// the parser was told not to require secrets (`config --check` lists every problem at once; a
/// command that does not need the value runs without it). Callers ask `Config.unsetSecrets` by
/// the value's key instead of recognising the value itself.
public struct UnsetSecret: Sendable, Equatable, CustomStringConvertible {
    /// The config key (`registry`, `providers.azure.connection_string`).
    public var key: String
    /// The environment variable that is not set.
    public var variable: String

    public init(key: String, variable: String) {
        self.key = key
        self.variable = variable
    }

    /// `env:NAME not set`, for a message that names the key itself.
    public var description: String { "env:\(variable) not set" }

    /// What the value reads as meanwhile, so that a check that still looks at it (a provider's
    /// key file) names the variable in its problem.
    public var placeholder: String { "<\(description)>" }
}
