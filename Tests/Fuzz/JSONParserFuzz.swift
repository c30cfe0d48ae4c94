// libFuzzer target: the JSON parser never crashes, and what it accepts survives a round trip
// (encoded, then parsed again, it is the same value); its peek at a few members refuses exactly
// what it refuses and reads those members as it does. Built by FuzzTests with
// `swiftc -sanitize=fuzzer,address`, linked to PushspoolCore built once with the same sanitizers.
@testable import PushspoolCore
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let keys: Set<String> = ["id", "kind", "not_before"]
    let peeked = try? JSONParser.members(bytes, named: keys)
    guard let value = try? JSONParser.parse(bytes) else {
        precondition(peeked == nil, "members accepted what parse refuses")
        return 0
    }
    let expected: JSONValue = if case .object(let pairs) = value { .object(pairs.filter { keys.contains($0.0) }) } else { .null }
    precondition(peeked.map { same($0, expected) } == true, "members read differently from parse")
    let again = try? JSONParser.parse(value.encoded())
    precondition(again.map { same($0, value) } == true, "round trip changed the value")
    return 0
}

/// Equal as JSON: numbers by value (2.5e3 is written back as 2500, which reads as an integer).
func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case let (.int(x), .double(y)), let (.double(y), .int(x)): return Double(x) == y
    case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
    case let (.object(x), .object(y)):
        return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && same($0.1, $1.1) }
    default: return a == b
    }
}
