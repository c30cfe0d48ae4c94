import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolCore
import PushspoolTestSupport

/// The OpenAPI document (`Sources/PushspoolServer/OpenAPI/openapi.json`) against what it
/// describes: the router's routes, the copy `serve` answers at `GET /v1/openapi.json`, and the
/// route table of the HTTP front door article. The running server's answers against it are
/// `OpenAPIConformanceTests`' (schemathesis).
@Suite struct OpenAPIDocumentTests {
    static let file = Paths.packageRoot.appendingPathComponent("Sources/PushspoolServer/OpenAPI/openapi.json")
    static let article = Paths.packageRoot.appendingPathComponent("Sources/PushspoolKit/PushspoolKit.docc/HTTPFrontDoor.md")

    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    /// `GET /v1/jobs/{id}`, one per operation of the document.
    static func operations(_ doc: [String: Any]) -> [String] {
        let paths = doc["paths"] as? [String: [String: Any]] ?? [:]
        return paths.flatMap { path, item in
            item.keys.filter { ["get", "put", "post", "delete", "patch", "head", "options", "trace"].contains($0) }
                .map { "\($0.uppercased()) \(path)" }
        }.sorted()
    }

    /// `serve` with everything on: app users, services, the dashboard (`operators_file`) and a
    /// registry that keeps notifications (SQLite), so every route the code has is there.
    static func routerWithEveryRoute() throws -> (FrontDoorServer, TempDir) {
        let dir = TempDir("pushspool-openapi")
        FrontDoorFiles.write(into: dir)
        var config = try ConfigLoader.parse(try JSONParser.parse("""
            {"spool": "spool", "registry": "registry.sqlite",
             "http": {"listen": "127.0.0.1:0", "users_file": "users.htpasswd", "tokens_file": "tokens.txt", "operators_file": "operators.htpasswd"}}
            """))
        config.baseDirectory = dir.url
        let spool = try Spool(root: dir.url.appendingPathComponent("spool"))
        let registry = try SQLiteRegistry(path: dir.path("registry.sqlite"))
        let server = try FrontDoorServer(.init(config: config, spool: spool, registry: registry,
                                               registrations: RegistrationService(registry: registry, hub: nil), authenticator: nil, log: Log(handler: CollectingLogHandler())))
        return (server, dir)
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteExists() throws {
        let (server, dir) = try Self.routerWithEveryRoute()
        _ = dir
        let routes = Set(server.routeNames)
        let documented = Set(Self.operations(try Self.document()))
        #expect(routes.count == server.routeNames.count, "a route is listed twice")
        #expect(routes.subtracting(documented).sorted() == [], "routes the document does not describe")
        #expect(documented.subtracting(routes).sorted() == [], "documented operations no route answers")
        #expect(routes.count > 40)
    }

    @Test func theDocumentIsOpenAPI31WithTheThreeKindsOfCredentials() throws {
        let doc = try Self.document()
        #expect(doc["openapi"] as? String == "3.1.0")
        let schemes = (doc["components"] as? [String: Any])?["securitySchemes"] as? [String: [String: Any]] ?? [:]
        #expect(schemes["basicAuth"]?["scheme"] as? String == "basic")
        #expect(schemes["bearerAuth"]?["scheme"] as? String == "bearer")
        #expect(schemes["operatorSession"]?["in"] as? String == "cookie")
        #expect(schemes["operatorSession"]?["name"] as? String == OperatorSessions.cookieName)
        // Every operation names its answers, and every operation but the open ones its credentials.
        for (path, item) in doc["paths"] as? [String: [String: [String: Any]]] ?? [:] {
            for (method, operation) in item {
                #expect((operation["responses"] as? [String: Any])?.isEmpty == false, "\(method) \(path) has no answers")
                #expect(operation["security"] != nil, "\(method) \(path) says nothing of credentials")
            }
        }
    }

    @Test func theBinaryServesTheRepositorysFile() throws {
        #expect(OpenAPIDocument.bytes == Array(try Data(contentsOf: Self.file)))
        let door = try SandboxFrontDoor()
        let answer = try door.serve.client().request("GET", "/v1/openapi.json")
        #expect(answer.status == 200)
        #expect(answer.header("Content-Type") == "application/json")
        #expect(Array(answer.body) == Array(try Data(contentsOf: Self.file)))
    }

    /// The article's route table is the document's, rendered by `table` (run with
    /// `PUSHSPOOL_WRITE_OPENAPI_TABLE=1` to write it after changing the document).
    @Test func theArticlesRouteTableIsGeneratedFromTheDocument() throws {
        let expected = Self.table(try Self.document())
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let begin = "<!-- routes: generated from openapi.json (OpenAPIDocumentTests) -->\n", end = "<!-- end of routes -->"
        let start = try #require(text.range(of: begin), "the article has no generated route table")
        let stop = try #require(text.range(of: end, range: start.upperBound..<text.endIndex))
        let current = String(text[start.upperBound..<stop.lowerBound])
        if current != expected, ProcessInfo.processInfo.environment["PUSHSPOOL_WRITE_OPENAPI_TABLE"] == "1" {
            try (text[..<start.upperBound] + expected + text[stop.lowerBound...]).write(to: Self.article, atomically: true, encoding: .utf8)
            return
        }
        #expect(current == expected, "the route table differs from openapi.json; expected:\n\(expected)")
    }

    /// One row per operation, grouped by the kind of caller: method, path, credentials, what it
    /// does, and the statuses it answers beyond those of every route (`isEveryRoutes`).
    static func table(_ doc: [String: Any]) -> String {
        var rows = ["| method | path | credentials | does | answers |", "|---|---|---|---|---|"]
        let paths = doc["paths"] as? [String: [String: [String: Any]]] ?? [:]
        let order = ["get", "post", "put", "delete"]
        for path in paths.keys.sorted(by: Self.pathOrder) {
            for method in order {
                guard let operation = paths[path]?[method] else { continue }
                let statuses = (operation["responses"] as? [String: Any] ?? [:]).filter { !Self.isEveryRoutes($0.value) }
                    .keys.sorted().joined(separator: ", ")
                let summary = operation["summary"] as? String ?? ""
                rows.append("| `\(method.uppercased())` | `\(path)` | \(credentials(operation["security"])) | \(summary) | \(statuses) |")
            }
        }
        return rows.joined(separator: "\n") + "\n"
    }

    /// The answers any route may give (a body, URI or headers too large, a rate limit, a retry
    /// later): the article says so once instead of in every row.
    static func isEveryRoutes(_ response: Any) -> Bool {
        let shared = ["PayloadTooLarge", "URITooLong", "HeadersTooLarge", "TooManyRequests", "Unavailable"]
        return shared.contains { (response as? [String: Any])?["$ref"] as? String == "#/components/responses/\($0)" }
    }

    /// Paths grouped as the article reads: the tutorial's, the services', operations, the dashboard.
    static func pathOrder(_ a: String, _ b: String) -> Bool {
        func group(_ p: String) -> Int {
            p.hasPrefix("/api/") ? 0 : p.hasPrefix("/apps/") ? 1 : p.hasPrefix("/v1/") ? 2 : p.hasPrefix("/ui") ? 4 : 3
        }
        return (group(a), a) < (group(b), b)
    }

    static func credentials(_ security: Any?) -> String {
        let alternatives = security as? [[String: Any]] ?? []
        if alternatives.isEmpty { return "none" }
        let names = ["basicAuth": "Basic", "bearerAuth": "bearer", "operatorSession": "session", "csrfToken": "CSRF token"]
        return alternatives.map { $0.keys.sorted { ($0 == "csrfToken" ? 1 : 0) < ($1 == "csrfToken" ? 1 : 0) }
            .map { names[$0] ?? $0 }.joined(separator: " + ") }.sorted().joined(separator: " or ")
    }
}
