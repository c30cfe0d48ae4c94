import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit
@testable import PushspoolCLI

/// The one redaction (`Redaction`): connection strings, configured secrets, libpq's messages.
struct RedactionTests {
    @Test func connectionStringsShowTheirPasswordAsStars() {
        #expect(Redaction.connectionString("postgresql://pushspool:s3cret@db.example/push") == "postgresql://pushspool:***@db.example/push")
        #expect(Redaction.connectionString("postgres://db1/push?user=app&password=x&sslmode=require")
                == "postgres://db1/push?user=app&password=***&sslmode=require")
        #expect(Redaction.connectionString("host=db.example dbname=push user=app password=s3cret sslmode=require")
                == "host=db.example dbname=push user=app password=*** sslmode=require")
        #expect(Redaction.connectionString(#"host=db password = 'it\'s secret' dbname=push"#) == "host=db password = *** dbname=push")
        #expect(Redaction.connectionString("postgresql://app@db1/push") == "postgresql://app@db1/push")
        #expect(Redaction.connectionString("jobs/registry.sqlite") == "jobs/registry.sqlite")
        #expect(RegistryLocation.isPostgres("host=db.example dbname=push password=x"))
        #expect(Secret("abc").description == "***")
    }

    @Test func thePasswordsOfAConnectionString() {
        #expect(Set(Redaction.passwords(inConnectionString: "postgresql://u:p%40ss-1@h/db")) == ["p%40ss-1", "p@ss-1"])
        #expect(Redaction.passwords(inConnectionString: "postgresql:///db?host=/tmp&password=qs-pass") == ["qs-pass"])
        #expect(Redaction.passwords(inConnectionString: "host=h password=kw-pass") == ["kw-pass"])
    }

    @Test func aConfigsSecretsAreMaskedInAnyText() throws {
        var config = Config()
        config.wns = WNSConfig(clientID: "id", clientSecret: Secret("wns-Secret-123"))
        config.azure = AzureConfig(connectionString: Secret("Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=hubKey-456="), hub: "h")
        config.registry = "postgresql://u:Pg-Pass-789@db/push"
        let secrets = Redaction.secrets(in: config)
        #expect(Set(secrets).isSuperset(of: ["wns-Secret-123", "hubKey-456=", "Pg-Pass-789"]))
        Redaction.register(secrets)
        let text = "token request failed: client_secret=wns-Secret-123 key hubKey-456= at postgresql://u:Pg-Pass-789@db/push"
        let shown = Redaction.scrub(text)
        for s in ["wns-Secret-123", "hubKey-456=", "Pg-Pass-789"] { #expect(!shown.contains(s), "\(shown)") }
        #expect(shown.contains("postgresql://u:***@db/push"))
        #expect(CLIError(.config, text).description == shown)
        let summary = String(decoding: ResultRecord.summary(id: "j", outcome: .failed(text), durationMS: 0).line(), as: UTF8.self)
        #expect(!summary.contains("wns-Secret-123") && !summary.contains("Pg-Pass-789"), "\(summary)")
    }

    /// libpq echoes a malformed URI's password in its own message (`invalid percent-encoded
    /// token: "…"`): the error that reaches the user has it masked.
    @Test func libpqsOwnMessagesAreMasked() {
        do {
            _ = try PostgresConnection(uri: "postgresql://u:Echoed-Pw%zz@127.0.0.1:1/db")
            Issue.record("connected")
        } catch {
            #expect(!error.description.contains("Echoed-Pw"), "\(error.description)")
        }
    }
}

@Suite struct RedactionScanTests {
    @Test func findsPasswordInAnyCase() {
        #expect(Redaction.mentionsPassword("host=db PASSWORD=x"))
        #expect(Redaction.mentionsPassword("ppassword"))
        #expect(Redaction.mentionsPassword("x Password"))
        #expect(!Redaction.mentionsPassword("GET /healthz 200 passwor"))
        #expect(!Redaction.mentionsPassword(""))
    }
}
