/// A registry failure: a registration that does not validate, an import line that does not parse,
/// or SQLite refusing (locked past the busy timeout, disk full, corrupt file). Messages name the
/// field and never include handles, which are credentials of sorts.
public struct RegistryError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A verdict: the data does not validate, or the database refused it (disk full, corrupt file).
        case refused
        /// Another process held the write lock past the busy timeout (a large import).
        case busy
        /// The registry's database server cannot be reached (PostgreSQL restarting, network cut).
        case unavailable
    }

    public var message: String
    /// Busy and unavailable are worth trying again later: not verdicts on the data.
    public var kind: Kind
    /// The registry's schema is newer than this binary knows: a configuration problem (upgrade
    /// pushspool), refused before anything was written.
    public var isNewerSchema = false

    public init(_ message: String, kind: Kind = .refused) {
        self.message = message
        self.kind = kind
    }

    /// A schema version `found` newer than `known`: refused, never written to.
    public static func newerSchema(_ found: Int, known: Int, hint: String = "upgrade pushspool") -> RegistryError {
        var e = RegistryError("registry schema version \(found) is newer than this pushspool supports (\(known)); \(hint) (nothing was written)")
        e.isNewerSchema = true
        return e
    }

    public var description: String { message }
}

extension RegistryError {
    /// A backend's failure as the contract's one error type: the backends' own statements throw
    /// `RegistryError`s already (SQLite's wrapper) or `PostgresError`s; anything else is kept as a
    /// refusal with its text. Called where a backend's internal, untyped work meets the typed
    /// `DeviceRegistry` methods (`SQLiteRegistry.locked`, `PostgresRegistry.run`/`transaction`), so no
    /// caller of the contract ever downcasts.
    static func from(_ error: any Error) -> RegistryError {
        switch error {
        case let error as RegistryError: error
        case let error as PostgresError: RegistryError(error)
        default: RegistryError("\(error)")
        }
    }

    /// What went wrong, without the `registry: ` a storage error starts with, for a message that
    /// names the registry itself (`registry /x/registry.sqlite: …`, `reading the registry failed: …`):
    /// one layer adds the context, so no message says `registry: registry: …`.
    public static func detail(_ error: any Error) -> String {
        let text = "\(error)"
        return text.hasPrefix("registry: ") ? String(text.dropFirst("registry: ".count)) : text
    }
}
