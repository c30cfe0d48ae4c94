import Foundation
import Testing
@testable import PushspoolKit

/// SAS tokens and connection strings, byte for byte. Expected tokens were computed independently
/// with Node (`encodeURIComponent(uri.toLowerCase()).toLowerCase()`, `crypto.createHmac`).
@Suite struct AzureSASTests {
    struct Vector: Sendable, CustomStringConvertible {
        var resource: String, keyName: String, key: String, expiry: Int, token: String
        var description: String { resource }
    }

    static let vectors: [Vector] = [
        // Mixed case is lowercased before and after encoding; the key's "+/=" are text, not base64.
        Vector(resource: "https://MyNS.servicebus.windows.net/MyHub", keyName: "DefaultFullSharedAccessSignature",
               key: "c2VjcmV0a2V5PT0/+key=", expiry: 1_900_003_600,
               token: "SharedAccessSignature sr=https%3a%2f%2fmyns.servicebus.windows.net%2fmyhub&sig=pBbC0HTCXPtUUaf1rwauOrXYDINLAvb36wrP1Skargg%3D&se=1900003600&skn=DefaultFullSharedAccessSignature"),
        // A port stays in the resource; "/" in the signature is encoded uppercase and not lowercased.
        Vector(resource: "https://127.0.0.1:8443/myhub", keyName: "DefaultFullSharedAccessSignature",
               key: "k0", expiry: 1_700_000_000,
               token: "SharedAccessSignature sr=https%3a%2f%2f127.0.0.1%3a8443%2fmyhub&sig=Zj%2FjEnJThsCrJl0PO4PUmQjEq8ho2j42Sq73iL%2Fe314%3D&se=1700000000&skn=DefaultFullSharedAccessSignature"),
    ]

    @Test(arguments: vectors)
    func tokenMatchesIndependentImplementation(_ v: Vector) {
        #expect(AzureSAS.token(resourceURI: v.resource, keyName: v.keyName, key: v.key, expiry: v.expiry) == v.token)
    }

    @Test func percentEncodingIsEncodeURIComponent() {
        #expect(AzureSAS.percentEncode("a-z_A.Z~0!*'()") == "a-z_A.Z~0!*'()")
        #expect(AzureSAS.percentEncode("https://h:1/x y+é=") == "https%3A%2F%2Fh%3A1%2Fx%20y%2B%C3%A9%3D")
    }

    @Test func signatureCoversExactlyTheEncodedResourceAndExpiry() {
        let sr = AzureSAS.encodedResource("https://ns.example/hub")
        let a = AzureSAS.signature(encodedResource: sr, expiry: 100, key: "k")
        #expect(a != AzureSAS.signature(encodedResource: sr, expiry: 101, key: "k"))
        #expect(a != AzureSAS.signature(encodedResource: "https://ns.example/hub", expiry: 100, key: "k"))
        #expect(a == Data(HMAC256.mac(key: Array("k".utf8), message: Array("\(sr)\n100".utf8))).base64EncodedString())
    }
}

@Suite struct AzureConnectionStringTests {
    @Test func parsesTheStandardForm() throws {
        let c = try AzureConnectionString.parse(
            "Endpoint=sb://MyNS.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=abc+/def=").get()
        #expect(c.baseURL == "https://myns.servicebus.windows.net")
        #expect(c.authority == "myns.servicebus.windows.net")
        #expect(c.keyName == "DefaultFullSharedAccessSignature")
        #expect(c.key == "abc+/def=")   // split at the first "=" only: padding survives
    }

    @Test func keepsATestPort() throws {
        let c = try AzureConnectionString.parse("Endpoint=sb://127.0.0.1:40123/;SharedAccessKeyName=r;SharedAccessKey=k;").get()
        #expect(c.baseURL == "https://127.0.0.1:40123")
    }

    struct Bad: Sendable, CustomStringConvertible {
        var text: String, problems: [String]
        var description: String { problems.joined(separator: "|") }
    }

    static let bad: [Bad] = [
        Bad(text: "", problems: ["missing (expected"]),
        Bad(text: "SharedAccessKey=SECRETKEY", problems: ["missing Endpoint", "missing SharedAccessKeyName"]),
        Bad(text: "Endpoint=amqp://ns/;SharedAccessKeyName=r;SharedAccessKey=SECRETKEY", problems: ["Endpoint must start with sb://"]),
        Bad(text: "Endpoint=sb://ns/hub;SharedAccessKeyName=r;SharedAccessKey=SECRETKEY", problems: ["without a path"]),
        Bad(text: "Endpoint=sb://ns:99999/;SharedAccessKeyName=r;SharedAccessKey=SECRETKEY", problems: ["invalid host or port"]),
        // A missing ";" puts the key inside the endpoint: the message must not echo it.
        Bad(text: "Endpoint=sb://ns/SharedAccessKey=SECRETKEY;SharedAccessKeyName=r", problems: ["without a path", "missing SharedAccessKey"]),
    ]

    @Test(arguments: bad)
    func reportsEveryProblemWithoutTheKey(_ b: Bad) {
        guard case .failure(let e) = AzureConnectionString.parse(b.text) else {
            Issue.record("accepted \(b.text)")
            return
        }
        #expect(e.problems.count == b.problems.count)
        for (problem, fragment) in zip(e.problems, b.problems) {
            #expect(problem.hasPrefix("providers.azure.connection_string: "))
            #expect(problem.contains(fragment), "\(problem)")
        }
        #expect(!e.description.contains("SECRETKEY"))
    }
}
