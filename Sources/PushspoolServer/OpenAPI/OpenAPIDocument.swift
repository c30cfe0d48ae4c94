/// The OpenAPI 3.1 document of every route of `serve`: `openapi.json` beside this file, the one
/// copy there is, compiled into the binary by the package (`.embedInCode`) and served as it is at
/// `GET /v1/openapi.json`. Tests hold it to the router (every route documented, nothing
/// documented that is not a route), to the HTTP front door article's table, and, in CI, to the
/// running server (schemathesis).
public enum OpenAPIDocument {
    /// The document's bytes, as written in the repository.
    public static let bytes: [UInt8] = PackageResources.openapi_json

    /// `GET /v1/openapi.json`, open to anyone: it describes routes, never data.
    static var route: FrontDoor.Route {
        FrontDoor.Route("GET", "/v1/openapi.json", .open) { call in
            call.respond(ServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(bytes)))
        }
    }
}
