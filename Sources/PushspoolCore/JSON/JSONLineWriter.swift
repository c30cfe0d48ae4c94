/// One JSON object written straight to bytes, fields in call order: for lines written by the
/// hundred thousand (result-log deliveries), where building a `JSONValue` tree first would cost
/// an allocation per field. Keys are static strings, written as they are (no escaping needed).
public struct JSONLineWriter {
    public private(set) var bytes: [UInt8]
    private var empty = true

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ k: StaticString) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// A string, or null.
    public mutating func field(_ k: StaticString, _ value: String?) {
        key(k)
        if let value { JSONValue.writeString(value, into: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    /// An array of strings (a device's tags), without a `JSONValue` per element.
    public mutating func field(_ k: StaticString, strings: [String]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, s) in strings.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONValue.writeString(s, into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func field(_ k: StaticString, _ value: Int) {
        key(k)
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func field(_ k: StaticString, _ value: JSONValue) {
        key(k)
        value.write(into: &bytes)
    }

    /// Bytes that already are one JSON value (a payload this program rendered), copied as they are.
    public mutating func field(_ k: StaticString, json: [UInt8]) {
        key(k)
        bytes.append(contentsOf: json)
    }

    /// The object closed and a newline added: one line of a JSON Lines file.
    public consuming func line() -> [UInt8] {
        bytes.append(contentsOf: [UInt8(ascii: "}"), 0x0A])
        return bytes
    }
}
