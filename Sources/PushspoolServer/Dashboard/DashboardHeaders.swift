/// The headers on every answer under `/ui/`: the page may load only what this server serves
/// (no inline script, so an injected `<script>` or `onerror=` cannot run), may not be framed by
/// any site (clickjacking), and nothing is cached or sniffed into another type.
enum DashboardHeaders {
    static let contentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'"

    static let all: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        // For browsers that predate frame-ancestors.
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        // Not no-referrer: with it a browser sends `Origin: null` on the login form, which the
        // login-CSRF check must refuse. same-origin tells other sites nothing.
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]
}
