import Foundation
import Testing

/// The dashboard's front door through the real binary: who gets in (operators by form and
/// session; never app users' Basic or services' bearer tokens), what a change needs (the
/// session's CSRF token), the headers every `/ui/` answer carries, and that logout ends the
/// session on the server.
@Suite(.serialized) struct DashboardDoorTests {
    /// With the operator `olivia` (password `s3cret`: `FrontDoorFiles.operators`).
    static func door() throws -> SandboxFrontDoor {
        try SandboxFrontDoor(httpExtra: #", "operators_file": "operators.htpasswd""#)
    }

    /// Logs in; the session cookie (`name=value`) and the CSRF token.
    static func login(_ c: RawHTTPClient, user: String = "olivia", password: String = "s3cret") throws -> (cookie: String, csrf: String) {
        let a = try c.request("POST", "/ui/login", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                              body: "user=\(user)&password=\(password)")
        #expect(a.status == 303 && a.header("Location") == "/ui/", "\(a.status) \(a.text)")
        let set = try #require(a.header("Set-Cookie"))
        let cookie = String(set.prefix { $0 != ";" })
        let s = try c.request("GET", "/ui/api/session", headers: [("Cookie", cookie)])
        let csrf = try #require((s.json as? [String: String])?["csrf"], "\(s.text)")
        return (cookie, csrf)
    }

    @Test func aFormLoginGivesAStrictHttpOnlyCookieAndLogoutEndsItOnTheServer() throws {
        let f = try Self.door()
        let c = try f.serve.client()
        // No session: the page sends the browser to the form; its JSON says 401 without a Basic
        // challenge (a browser would offer its own password dialog).
        var a = try c.request("GET", "/ui/")
        #expect(a.status == 303 && a.header("Location") == "/ui/login")
        a = try c.request("GET", "/ui/api/jobs")
        #expect(a.status == 401 && a.header("WWW-Authenticate")?.hasPrefix("Basic") == false, "\(a.text)")
        #expect(try c.request("GET", "/ui/login").status == 200)
        // A wrong password: the form again, no cookie.
        a = try c.request("POST", "/ui/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "user=olivia&password=nope")
        #expect(a.status == 401 && a.header("Set-Cookie") == nil && a.text.contains("wrong password"))
        // An app user is no operator, whatever its password is worth on /api.
        a = try c.request("POST", "/ui/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "user=alice&password=s3cret")
        #expect(a.status == 401 && a.header("Set-Cookie") == nil)

        a = try c.request("POST", "/ui/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "user=olivia&password=s3cret")
        let set = try #require(a.header("Set-Cookie"))
        #expect(set.contains("; HttpOnly") && set.contains("; SameSite=Strict") && set.contains("Path=/ui") && !set.contains("Secure"), "\(set)")
        let cookie = String(set.prefix { $0 != ";" })
        #expect(cookie.count > 40)
        a = try c.request("GET", "/ui/", headers: [("Cookie", cookie)])
        #expect(a.status == 200 && a.text.contains("/ui/assets/app.js"))
        a = try c.request("GET", "/ui/api/session", headers: [("Cookie", cookie)])
        let session = try #require(a.json as? [String: String])
        #expect(session["user"] == "olivia" && (session["csrf"]?.count ?? 0) > 40)
        // The access log names the operator, never the cookie.
        #expect(f.serve.log.contains("operator:olivia") && !f.serve.log.contains(cookie.dropFirst(18)))

        // Logout needs the token too; then the very same cookie is refused.
        #expect(try c.request("POST", "/ui/logout", headers: [("Cookie", cookie)]).status == 403)
        a = try c.request("POST", "/ui/logout", headers: [("Cookie", cookie), ("X-CSRF-Token", session["csrf"]!)])
        #expect(a.status == 200 && a.header("Set-Cookie")?.contains("Max-Age=0") == true)
        #expect(try c.request("GET", "/ui/api/session", headers: [("Cookie", cookie)]).status == 401)
        #expect(try c.request("GET", "/ui/", headers: [("Cookie", cookie)]).status == 303)
    }

    @Test func behindATrustedTLSProxyTheCookieIsSecure() throws {
        let form = [("Content-Type", "application/x-www-form-urlencoded"), ("X-Forwarded-Proto", "https")]
        // From a proxy serve does not trust, the header means nothing.
        var f = try Self.door()
        var a = try f.serve.client().request("POST", "/ui/login", headers: form, body: "user=olivia&password=s3cret")
        #expect(a.status == 303 && a.header("Set-Cookie")?.contains("Secure") == false)
        f = try SandboxFrontDoor(httpExtra: #", "operators_file": "operators.htpasswd", "trusted_proxies": ["127.0.0.1"]"#)
        a = try f.serve.client().request("POST", "/ui/login", headers: form, body: "user=olivia&password=s3cret")
        #expect(a.status == 303 && a.header("Set-Cookie")?.hasSuffix("; Secure") == true, "\(a.header("Set-Cookie") ?? "-")")
    }

    @Test func appUsersAndServiceTokensAreRefusedEverywhereUnderUI() throws {
        let f = try Self.door()
        let c = try f.serve.client()
        let (cookie, _) = try Self.login(c)
        for target in ["/ui/", "/ui/api/jobs", "/ui/api/system", "/ui/api/devices", "/ui/api/jobs/x"] {
            for auth in [FrontDoorFiles.basic("alice"), FrontDoorFiles.bearer] {
                let a = try c.request("GET", target, headers: [("Authorization", auth)])
                #expect(a.status == 403, "\(target) \(auth.prefix(6)): \(a.status)")
                // Not even beside a valid session: the dashboard is not an API for other callers.
                let b = try c.request("GET", target, headers: [("Authorization", auth), ("Cookie", cookie)])
                #expect(b.status == 403, "\(target) with a session: \(b.status)")
            }
        }
        // A state change with Basic or a bearer token changes nothing.
        _ = try f.cli(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "news", "--id", "d1"])
        f.dir.write("spool/incoming/held.json", #"{"id": "held", "to_tag": "news", "pns": ["fcm"], "message": "m"}"#)
        for auth in [FrontDoorFiles.basic("alice"), FrontDoorFiles.bearer] {
            #expect(try c.request("POST", "/ui/api/jobs/held/pause", headers: [("Authorization", auth)]).status == 403)
        }
        #expect(f.dir.list("spool/control").isEmpty)
    }

    @Test func everyChangeNeedsTheSessionsCSRFToken() throws {
        let f = try Self.door()
        let c = try f.serve.client()
        let (cookie, csrf) = try Self.login(c)
        let (other, otherCSRF) = try Self.login(try f.serve.client())
        f.dir.write("spool/incoming/held.json", #"{"id": "held", "to_tag": "news", "pns": ["fcm"], "message": "m"}"#)
        // No token, a wrong one, another session's: refused, nothing written.
        for token in [nil, "x", otherCSRF] {
            var headers = [("Cookie", cookie)]
            if let token { headers.append(("X-CSRF-Token", token)) }
            #expect(try c.request("POST", "/ui/api/jobs/held/pause", headers: headers).status == 403)
            let job = try c.request("POST", "/ui/api/jobs", headers: headers, body: #"{"id": "new", "broadcast": true, "pns": ["fcm"], "message": "m"}"#)
            #expect(job.status == 403)
        }
        #expect(f.dir.list("spool/control").isEmpty && f.dir.list("spool/incoming") == ["held.json"])
        _ = other
        // With it: the same durable paths as the job API.
        var a = try c.request("POST", "/ui/api/jobs/held/pause", headers: [("Cookie", cookie), ("X-CSRF-Token", csrf)])
        #expect(a.status == 202 && (a.json as? [String: Any])?["state"] as? String == "paused", "\(a.text)")
        a = try c.request("POST", "/ui/api/jobs", headers: [("Cookie", cookie), ("X-CSRF-Token", csrf)],
                          body: #"{"id": "new", "broadcast": true, "pns": ["fcm"], "message": "m"}"#)
        #expect(a.status == 202, "\(a.text)")
        #expect(f.dir.read("spool/incoming/new.json") != nil)
        // A login form posted from another site is refused before any password is checked.
        a = try c.request("POST", "/ui/login", headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", "http://evil.example")],
                          body: "user=olivia&password=s3cret")
        #expect(a.status == 403 && a.header("Set-Cookie") == nil)
    }

    @Test func everyUIAnswerCarriesThePolicyAndTheAssetsAreServedFromTheBinary() throws {
        let f = try Self.door()
        let c = try f.serve.client()
        let (cookie, _) = try Self.login(c)
        for (target, type) in [("/ui/", "text/html"), ("/ui/login", "text/html"), ("/ui/assets/app.js", "text/javascript"),
                               ("/ui/assets/charts.js", "text/javascript"), ("/ui/assets/app.css", "text/css"),
                               ("/ui/assets/icon.svg", "image/svg+xml"), ("/ui/api/jobs", "application/json"), ("/ui/nothing", "application/json")] {
            let a = try c.request("GET", target, headers: [("Cookie", cookie)])
            #expect(a.header("Content-Security-Policy") == "default-src 'self'; frame-ancestors 'none'", "\(target)")
            #expect(a.header("X-Frame-Options") == "DENY" && a.header("X-Content-Type-Options") == "nosniff", "\(target)")
            #expect(a.header("Content-Type")?.hasPrefix(type) == true, "\(target): \(a.header("Content-Type") ?? "-")")
            if type == "text/html" {
                // No inline script: every <script> names its file, no on…= handler, no javascript: URL.
                #expect(a.text.components(separatedBy: "<script").dropFirst().allSatisfy { $0.hasPrefix(" src=\"/ui/assets/") }, "\(target)")
                #expect(a.text.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil && !a.text.contains("javascript:"))
                // Nothing from outside: no CDN, no outside font.
                #expect(!a.text.contains("http://") && !a.text.contains("https://"))
            }
        }
        // The script inserts text only: it never assigns HTML.
        let js = try c.request("GET", "/ui/assets/app.js").text + (try c.request("GET", "/ui/assets/charts.js").text)
        for forbidden in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("] {
            #expect(!js.contains(forbidden), "\(forbidden)")
        }
        // The routes' own answers are not a way around the policy for API responses either.
        #expect(try c.request("GET", "/healthz").header("Content-Security-Policy") == nil)
    }

    @Test func theComposePreviewNamesTheFieldOfEachProblemAndNothingIsQueued() throws {
        let f = try Self.door()
        let c = try f.serve.client()
        let (cookie, csrf) = try Self.login(c)
        let h = [("Cookie", cookie), ("X-CSRF-Token", csrf)]
        for i in 1...3 { _ = try f.cli(["register", "--platform", "apns", "--handle", String(format: "%064x", i), "--tag", "news"]) }
        _ = try f.cli(["register", "--platform", "fcm", "--handle", "tok-9", "--tag", "news"])
        let big = String(repeating: "x", count: 5000)
        for (body, field) in [(#"{"tags": "news && (", "pns": ["apns"], "message": "m"}"#, "tags"),
                              (#"{"to_tag": "news", "app": "nope", "pns": ["apns"], "message": "m"}"#, "app"),
                              (#"{"to_tag": "news", "pns": ["apns"], "message": "\#(big)"}"#, "message"),
                              (#"{"to_tag": "news", "pns": ["apns"], "message": "m", "local_time": "09:00", "local_date": "2001-01-01"}"#, "local_date")] {
            let a = try c.request("POST", "/ui/api/preview", headers: h, body: body)
            let doc = try #require(a.json as? [String: Any], "\(a.text)")
            let fields = (doc["problems"] as? [[String: String]])?.compactMap { $0["field"] } ?? []
            #expect(a.status == 200 && doc["ok"] as? Bool == false && fields.contains(field), "\(field): \(a.text.prefix(300))")
            let sent = try c.request("POST", "/ui/api/jobs", headers: h, body: body)
            let sentFields = ((sent.json as? [String: Any])?["problems"] as? [[String: String]])?.compactMap { $0["field"] } ?? []
            #expect(sent.status == 400 && sentFields.contains(field), "\(field): \(sent.status) \(sent.text.prefix(200))")
        }
        #expect(f.dir.list("spool/incoming").isEmpty)
        // A good job: the count per app and platform as validate --resolve has it, and each payload as sent.
        let a = try c.request("POST", "/ui/api/preview", headers: h, body: #"{"to_tag": "news", "pns": ["apns", "fcm"], "title": "T", "message": "hello"}"#)
        let doc = try #require(a.json as? [String: Any])
        #expect(doc["ok"] as? Bool == true && doc["devices"] as? Int == 4, "\(a.text)")
        let reach = (doc["reach"] as? [[String: Any]]) ?? []
        #expect(reach.map { "\($0["platform"]!)=\($0["devices"]!)" } == ["apns=3", "fcm=1"])
        let payloads = (doc["payloads"] as? [[String: Any]]) ?? []
        let apns = payloads.first { $0["platform"] as? String == "apns" }?["body"] as? String
        #expect(apns == #"{"aps":{"alert":{"title":"T","body":"hello"}}}"#, "\(apns ?? "-")")
        // A secure job's preview shows the id's shape, never its text.
        let s = try c.request("POST", "/ui/api/preview", headers: h, body: #"{"to_tag": "news", "pns": ["apns", "fcm"], "message": "the secret text", "secure": true}"#)
        #expect(s.text.contains("secureId") && !s.text.contains("the secret text"), "\(s.text)")
    }
}
