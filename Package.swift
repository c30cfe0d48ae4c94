// swift-tools-version: 6.0
import PackageDescription

// No package dependencies: the toolchain, three system C libraries and a header-only OS shim.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "pushspool",
    platforms: [.macOS(.v15)],   // Synchronization.Mutex/Atomic
    products: [
        .executable(name: "pushspool", targets: ["pushspool"]),
        .library(name: "PushspoolKit", targets: ["PushspoolKit"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        // OS seams Swift cannot call directly (renameat2 with RENAME_NOREPLACE).
        .systemLibrary(name: "CSystem"),
        // Plain Sendable values and pure logic: jobs, tag expressions, rendering, retry decisions.
        .target(name: "PushspoolCore", swiftSettings: strict),
        // Everything that does I/O: spool, registry, engine, providers, transports, CLI.
        .target(name: "PushspoolKit",
                dependencies: ["PushspoolCore", "CSQLite", "CCurl", "CCrypto", "CSystem"],
                swiftSettings: strict),
        .executableTarget(name: "pushspool", dependencies: ["PushspoolKit"], swiftSettings: strict),
        .executableTarget(name: "pushspool-bench", dependencies: ["PushspoolKit"],
                          exclude: ["peer-node-client.js", "README.md"], swiftSettings: strict),
        .testTarget(name: "PushspoolCoreTests", dependencies: ["PushspoolCore"], swiftSettings: strict),
        .testTarget(name: "PushspoolKitTests",
                    dependencies: ["PushspoolKit", "pushspool"],
                    swiftSettings: strict),
    ]
)
