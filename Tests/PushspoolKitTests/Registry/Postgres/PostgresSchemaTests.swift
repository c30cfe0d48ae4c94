import Foundation
import Synchronization
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The PostgreSQL schema: created and versioned by pushspool, migrated once however many hosts
/// start together, a newer one refused; `pushspool registry migrate` and `run` through the binary.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct PostgresSchemaTests {
    @Test func freshDatabaseGetsTheCurrentVersionOnce() throws {
        let uri = try RegistryFixture.postgresDatabase()
        #expect(try PostgresRegistry.migrate(uri: uri) == (from: 0, to: PostgresSchema.version))
        #expect(try PostgresRegistry.migrate(uri: uri) == (from: PostgresSchema.version, to: PostgresSchema.version))
        let c = try PostgresConnection(uri: uri)
        #expect(try c.query("SELECT count(*) FROM pushspool_schema").int64(0, 0) == Int64(PostgresSchema.version))
    }

    @Test func hostsStartingTogetherMigrateOnce() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do {
                let registry = try PostgresRegistry(uri: uri)
                try registry.upsert(RegistryFixture.reg(nil, .fcm, "h-\(UUID().uuidString)"))
                registry.close()
            } catch {
                failures.add("\(error)")
            }
        }
        #expect(failures.all.isEmpty)
        let c = try PostgresConnection(uri: uri)
        #expect(try c.query("SELECT count(*) FROM pushspool_schema").int64(0, 0) == Int64(PostgresSchema.version))
        #expect(try c.query("SELECT count(*) FROM devices").int64(0, 0) == 6)
    }

    @Test func newerSchemaIsRefused() throws {
        let uri = try RegistryFixture.postgresDatabase()
        try PostgresRegistry(uri: uri).close()
        let c = try PostgresConnection(uri: uri)
        try c.query("INSERT INTO pushspool_schema(version) VALUES($1::integer)", ["\(PostgresSchema.version + 5)"])
        let error = #expect(throws: RegistryError.self) { try PostgresRegistry(uri: uri) }
        #expect(error?.message == "registry schema version \(PostgresSchema.version + 5) is newer than this pushspool supports (\(PostgresSchema.version)); upgrade pushspool on this host (nothing was written)")
        #expect(throws: RegistryError.self) { try PostgresRegistry(uri: uri, migrate: false) }
    }

    @Test func migrateCommandAndRunThroughTheBinary() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let dir = TempDir("pg-cli")
        // `env:NAME`: the URI (which may hold a password) stays out of the file.
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "env:PUSHSPOOL_TEST_REGISTRY"}"#)
        let env = ["PUSHSPOOL_TEST_REGISTRY": uri]
        let config = ["--config", dir.path("pushspool.json")]
        let first = try runPushspool(["registry", "migrate"] + config, env: env)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("schema migrated from version 0 to \(PostgresSchema.version)"), "\(first.stdout)")
        let again = try runPushspool(["registry", "migrate"] + config, env: env)
        #expect(again.stdout.contains("schema version \(PostgresSchema.version), nothing to migrate"), "\(again.stdout)")

        #expect(try runPushspool(["init"] + config, env: env).status == 0)
        let registered = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "t", "--id", "d1"] + config, env: env)
        #expect(registered.status == 0, "\(registered.stderr)")
        let count = try runPushspool(["devices", "--count", "--tags", "t"] + config, env: env)
        #expect(count.stdout == "1\n", "\(count.stderr)")

        // A host still on this binary after another host migrated to a newer schema.
        let c = try PostgresConnection(uri: uri)
        try c.query("INSERT INTO pushspool_schema(version) VALUES($1::integer)", ["\(PostgresSchema.version + 1)"])
        let refused = try runPushspool(["run", "--once"] + config, env: env)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("registry schema version \(PostgresSchema.version + 1) is newer than this pushspool supports"), "\(refused.stderr)")
        let migrate = try runPushspool(["registry", "migrate"] + config, env: env)
        #expect(migrate.status == 78 && migrate.stderr.contains("upgrade pushspool on this host (nothing was written)"), "\(migrate.stderr)")

        // config --check prints the URI without its password.
        let check = try runPushspool(["config", "--check"] + config, env: ["PUSHSPOOL_TEST_REGISTRY": "postgresql://app:s3cret@db.internal/push"])
        #expect(check.stdout.contains("postgresql://app:***@db.internal/push") && !check.stdout.contains("s3cret"),
                "\(check.stdout) \(check.stderr)")

        // Unset: a clear configuration error, not a file named "<env:…>".
        let unset = try runPushspool(["devices", "--count"] + config)
        #expect(unset.status == 78 && unset.stderr.contains("PUSHSPOOL_TEST_REGISTRY"), "\(unset.stderr)")
    }

    @Test func configCheckRedactsTheRegistryPassword() {
        #expect(RegistryLocation.redacted("postgresql://app:s3cret@db1:5432/push") == "postgresql://app:***@db1:5432/push")
        #expect(RegistryLocation.redacted("postgres://db1/push?user=app&password=x&sslmode=require")
                == "postgres://db1/push?user=app&password=***&sslmode=require")
        #expect(RegistryLocation.redacted("postgresql://app@db1/push") == "postgresql://app@db1/push")
        #expect(RegistryLocation.redacted("jobs/registry.sqlite") == "jobs/registry.sqlite")
    }
}

final class Failures: Sendable {
    private let list = Synchronization.Mutex<[String]>([])
    func add(_ s: String) { list.withLock { $0.append(s) } }
    var all: [String] { list.withLock { $0 } }
}
