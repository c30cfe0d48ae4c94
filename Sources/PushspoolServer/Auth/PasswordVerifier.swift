/// Checks a password against a stored htpasswd hash. The seam exists so tests can count how
/// often the expensive check really runs (the verified-credential cache must spare it).
protocol PasswordVerifier: Sendable {
    /// Whether `password` (no NUL bytes) hashes to `hash`.
    func verify(password: [UInt8], against hash: String) -> Bool
}
