import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The registry backends the shared registry contract runs against. Tests take one as an
/// argument (`@Test(arguments: RegistryBackend.allCases)`); the PostgreSQL case is skipped, with
/// the reason, where no PostgreSQL server can be started.
enum RegistryBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// Helpers shared by the registry suites (namespaced: the test module is shared with other areas).
enum RegistryFixture {
    /// A registry in a fresh temporary folder; keep the TempDir alive as long as the registry.
    static func make(_ name: String = "registry.sqlite") throws -> (TempDir, SQLiteRegistry) {
        let dir = TempDir("registry")
        return (dir, try SQLiteRegistry(path: dir.path(name)))
    }

    /// An empty registry on `backend` (PostgreSQL: a new database of the shared test cluster),
    /// with a fresh temporary folder for files the test writes.
    static func make(on backend: RegistryBackend) throws -> (TempDir, any RegistryDatabase) {
        switch backend {
        case .sqlite:
            let (dir, registry) = try make()
            return (dir, registry)
        case .postgres:
            return (TempDir("registry"), try PostgresRegistry(uri: try postgresDatabase()))
        }
    }

    /// A new database's URI, or the test is cancelled (shown as skipped) with the reason.
    static func postgresDatabase() throws -> String {
        switch PostgresCluster.shared {
        case .success(let cluster): return try cluster.createDatabase()
        case .failure(let error):
            // A cancelled test case prints nothing of its own: say what was skipped and why.
            print("➜ \(Test.current?.name ?? "test") (postgres) skipped: \(error.message)")
            try Test.cancel("PostgreSQL tests skipped: \(error.message)")
        }
    }

    static func reg(_ id: String?, _ platform: Platform = .apns, _ handle: String, _ tags: [String] = []) -> Registration {
        Registration(id: id, platform: platform, handle: handle, tags: tags)
    }
}
