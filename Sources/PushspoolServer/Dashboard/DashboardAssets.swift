/// The dashboard's page, login form, style sheet, scripts and icon, written in this repository
/// and compiled into the binary: nothing is installed beside it, nothing is fetched from a CDN,
/// and no build step turns them into something else. The page's scripts are files of their own
/// (never inline), so `Content-Security-Policy: default-src 'self'` holds; they put every string
/// that came from a job, a registration or a provider into the page as text (`textContent`).
enum DashboardAssets {
    struct File: Sendable {
        var name: String
        var contentType: String
        var text: String
    }

    /// Served under `/ui/assets/` to anyone (they hold no data: the login page needs the style).
    static let files: [File] = [
        File(name: "app.css", contentType: "text/css; charset=utf-8", text: style),
        File(name: "app.js", contentType: "text/javascript; charset=utf-8", text: script),
        File(name: "charts.js", contentType: "text/javascript; charset=utf-8", text: charts),
        File(name: "icon.svg", contentType: "image/svg+xml", text: icon),
    ]

    /// `/ui/`: the one page; `app.js` draws each view into `<main>` from the address's `#/…`.
    static let index = File(name: "index.html", contentType: "text/html; charset=utf-8", text: indexHTML)
    /// `/ui/login`: a plain form (no script at all); `<!--message-->` takes a fixed sentence.
    static let login = File(name: "login.html", contentType: "text/html; charset=utf-8", text: loginHTML)
}
