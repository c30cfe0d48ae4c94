import Testing
@testable import PushspoolCore

/// An `env:` value whose variable is not set is a value of its own (`Config.unsetSecrets`), not a
/// string to be recognised later.
@Suite struct UnsetSecretTests {
    static let document: JSONValue = .object([
        ("spool", "/tmp/s"), ("registry", "env:PUSHSPOOL_TEST_UNSET_REGISTRY"),
    ])

    @Test func letThroughItIsRecordedByKey() throws {
        let config = try ConfigParser.parse(Self.document, environment: [:], requireSecrets: false)
        let unset = try #require(config.unsetSecrets["registry"])
        #expect(unset == UnsetSecret(key: "registry", variable: "PUSHSPOOL_TEST_UNSET_REGISTRY"))
        #expect(unset.description == "env:PUSHSPOOL_TEST_UNSET_REGISTRY not set")
        #expect(config.unsetSecrets.count == 1)
    }

    @Test func setOrRequiredItIsNotRecorded() throws {
        let set = try ConfigParser.parse(Self.document, environment: ["PUSHSPOOL_TEST_UNSET_REGISTRY": "/r.sqlite"],
                                         requireSecrets: false)
        #expect(set.unsetSecrets.isEmpty && set.registry == "/r.sqlite")
        let error = #expect(throws: ConfigError.self) { try ConfigParser.parse(Self.document, environment: [:]) }
        #expect(error?.problems == ["registry: environment variable PUSHSPOOL_TEST_UNSET_REGISTRY is not set"])
    }
}
