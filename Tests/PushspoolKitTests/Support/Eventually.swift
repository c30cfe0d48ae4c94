import Foundation
import Testing

/// Waiting on an event (a file appearing, a log line, a fake's request count) instead of a fixed
/// sleep: a loaded 2-core machine makes every fixed delay too short some day, and an idle one
/// makes it too long every day. The timeouts are generous bounds for a stuck run, not
/// expectations of speed; a met condition returns at the next poll.
///
/// Polls `observe` every `poll` seconds until `done` holds for what it returned, at most
/// `timeout` seconds (monotonic time, so a clock step cannot end the wait early). On timeout it
/// records an issue naming what was awaited and what was last seen, and returns that last value,
/// so the test's own expectations go on to say what is wrong with it.
@discardableResult
func eventually<Value>(_ what: @autoclosure () -> String, timeout: Double = 60, poll: Double = 0.02,
                       sourceLocation: SourceLocation = #_sourceLocation,
                       _ observe: () throws -> Value, until done: (Value) -> Bool) rethrows -> Value {
    var seen: Value? = nil
    let met = try pollUntil(timeout: timeout, poll: poll) {
        let value = try observe()
        seen = value
        return done(value)
    }
    if !met {
        Issue.record("timed out after \(timeout) s waiting for \(what()); last seen: \(seen.map { "\($0)" } ?? "nothing")",
                     sourceLocation: sourceLocation)
    }
    return seen!
}

/// `eventually` for a plain condition; `lastSeen` describes the state on timeout (the facts a
/// flaky run needs: counts, folder listings, the last lines of a log).
@discardableResult
func eventually(_ what: @autoclosure () -> String, timeout: Double = 60, poll: Double = 0.02,
                lastSeen: () -> String = { "(not described)" },
                sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () throws -> Bool) rethrows -> Bool {
    let met = try pollUntil(timeout: timeout, poll: poll, condition)
    if !met {
        Issue.record("timed out after \(timeout) s waiting for \(what()); last seen: \(lastSeen())", sourceLocation: sourceLocation)
    }
    return met
}

/// The same polling without recording an issue, for support code that throws its own error
/// (a server that did not start): whether `condition` held within `timeout` seconds.
func pollUntil(timeout: Double, poll: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
    while true {
        if try condition() { return true }
        if DispatchTime.now().uptimeNanoseconds >= end { return false }
        usleep(useconds_t(poll * 1e6))
    }
}
