// swift-tools-version: 6.0
import PackageDescription

// No package dependencies: the toolchain, system C libraries (SQLite, libpq, libcurl, OpenSSL, nghttp2,
// libmicrohttpd, libcrypt, libidn2)
// and a header-only OS shim.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "pushspool",
    platforms: [.macOS(.v15)],   // Synchronization.Mutex/Atomic
    products: [
        .executable(name: "pushspool", targets: ["pushspool"]),
        .library(name: "PushspoolKit", targets: ["PushspoolKit"]),
        .library(name: "PushspoolServer", targets: ["PushspoolServer"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        // PostgreSQL's client library: the registry shared by dispatchers on several hosts.
        .systemLibrary(name: "CLibpq", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CTLS", pkgConfig: "libssl",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2",
                       providers: [.apt(["libnghttp2-dev"]), .brew(["libnghttp2"])]),
        // The HTTP/1.1 server of `pushspool serve` (keep-alive, epoll thread pool, TLS through GnuTLS).
        .systemLibrary(name: "CMHD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),
        // crypt_r: htpasswd password hashes (bcrypt, SHA-512-crypt) for `serve`'s Basic auth.
        .systemLibrary(name: "CCrypt", providers: [.apt(["libcrypt-dev"])]),
        // IDNA: allowed_hosts entries and channel/endpoint hosts compared in their ASCII (xn--) form.
        .systemLibrary(name: "CIDN2", pkgConfig: "libidn2",
                       providers: [.apt(["libidn2-dev"]), .brew(["libidn2"])]),
        // OS seams Swift cannot call directly (renameat2 with RENAME_NOREPLACE).
        .systemLibrary(name: "CSystem"),
        // Plain Sendable values and pure logic: jobs, tag expressions, rendering, retry decisions.
        .target(name: "PushspoolCore", swiftSettings: strict),
        // HTTP transports behind one seam: HTTP/2 on nghttp2 + OpenSSL, HTTP/1.1 on libcurl.
        .target(name: "PushspoolHTTP", dependencies: ["CTLS", "CNghttp2", "CCurl"], swiftSettings: strict),
        // Everything else that does I/O: spool, registry, engine, providers. No HTTP server: an
        // embedder of the engine links none.
        .target(name: "PushspoolKit",
                dependencies: ["PushspoolCore", "PushspoolHTTP", "CSQLite", "CLibpq", "CCrypto", "CSystem", "CIDN2"],
                swiftSettings: strict),
        // The HTTP front door of `pushspool serve`: libmicrohttpd, htpasswd checks through libcrypt,
        // the routes and their authentication, over the engine's spool intake and registry.
        // Its OpenAPI document is a file of the repository compiled into the binary (served at
        // `GET /v1/openapi.json`): one copy, nothing installed beside the binary.
        .target(name: "PushspoolServer",
                dependencies: ["PushspoolKit", "PushspoolCore", "CMHD", "CCrypt", "CCrypto"],
                resources: [.embedInCode("OpenAPI/openapi.json")],
                swiftSettings: strict),
        // The commands: argument parsing, exit codes, signal handling, over PushspoolKit. A library
        // (not the executable itself) so the tests can reach the command table.
        .target(name: "PushspoolCLI", dependencies: ["PushspoolKit", "PushspoolServer"], swiftSettings: strict),
        .executableTarget(name: "pushspool", dependencies: ["PushspoolCLI"], swiftSettings: strict),
        .executableTarget(name: "pushspool-bench", dependencies: ["PushspoolKit", "PushspoolHTTP"],
                          exclude: ["peer-node-client.js", "peer-node-webpush.js", "README.md"], swiftSettings: strict),
        .testTarget(name: "PushspoolCoreTests", dependencies: ["PushspoolCore"], swiftSettings: strict),
        // Test doubles shared by the test targets (a scripted provider, an in-memory log handler):
        // kept out of the library.
        .target(name: "PushspoolTestSupport", dependencies: ["PushspoolKit"], path: "Tests/PushspoolTestSupport",
                swiftSettings: strict),
        .testTarget(name: "PushspoolKitTests",
                    dependencies: ["PushspoolKit", "PushspoolServer", "PushspoolCLI", "PushspoolHTTP", "pushspool", "PushspoolTestSupport"],
                    swiftSettings: strict),
    ]
)
