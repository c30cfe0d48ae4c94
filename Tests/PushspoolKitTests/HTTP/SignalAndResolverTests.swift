import Foundation
@testable import PushspoolHTTP
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP client leaves the process's signal dispositions alone (its sockets write with
/// MSG_NOSIGNAL), and its name lookups end at the connect deadline.
@Suite(.serialized) struct SignalAndResolverTests {
    static func sigpipeDisposition() -> UnsafeMutableRawPointer? {
        var current = sigaction()
        sigaction(SIGPIPE, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: UnsafeMutableRawPointer?.self)
    }

    @Test func creatingAClientDoesNotIgnoreSIGPIPEForTheProcess() throws {
        var saved = sigaction()
        sigaction(SIGPIPE, nil, &saved)
        defer { sigaction(SIGPIPE, &saved, nil) }
        signal(SIGPIPE, SIG_DFL)
        let client = try H2Client(options: HTTPClientOptions())
        defer { client.shutdown() }
        #expect(Self.sigpipeDisposition() == nil, "SIGPIPE's disposition changed when an HTTP client was made")
    }

    @Test func aLookupPastItsDeadlineFailsAsATimeout() throws {
        // Any name needs the resolver; a deadline already passed never waits for it.
        #expect(throws: HTTPTransportError.self) {
            _ = try Resolver.resolve("push.example.invalid", port: 443, until: monotonicNow() - 1)
        }
        do {
            _ = try Resolver.resolve("push.example.invalid", port: 443, until: monotonicNow() - 1)
        } catch {
            #expect(error.description == "resolving push.example.invalid timed out")
        }
        // Address literals need no lookup and no thread.
        let literal = try Resolver.resolve("127.0.0.1", port: 443, until: monotonicNow() - 1)
        #expect(literal.list != nil)
        let local = try Resolver.resolve("localhost", port: 443, until: monotonicNow() + 5)
        #expect(local.list != nil)
    }
}
