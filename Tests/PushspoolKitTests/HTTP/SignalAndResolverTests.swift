import Foundation
@testable import PushspoolHTTP
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP client leaves the process's signal dispositions alone (its sockets write with
/// MSG_NOSIGNAL), and its name lookups end at the connect deadline.
@Suite(.serialized) struct SignalAndResolverTests {
    static func sigpipeHandler() -> UnsafeMutableRawPointer? {
        var current = sigaction()
        sigaction(SIGPIPE, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: UnsafeMutableRawPointer?.self)
    }

    @Test func creatingAClientLeavesSIGPIPEAlone() throws {
        var saved = sigaction()
        sigaction(SIGPIPE, nil, &saved)
        defer { sigaction(SIGPIPE, &saved, nil) }
        // A handler of the test's own (doing nothing: harmless to tests running meanwhile); a
        // client that set SIGPIPE to be ignored would replace it.
        let mine: @convention(c) (Int32) -> Void = { _ in }
        signal(SIGPIPE, mine)
        let expected = unsafeBitCast(mine, to: UnsafeMutableRawPointer?.self)
        let client = try H2Client(options: HTTPClientOptions())
        defer { client.shutdown() }
        #expect(Self.sigpipeHandler() == expected, "SIGPIPE's disposition changed when an HTTP client was made")
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
