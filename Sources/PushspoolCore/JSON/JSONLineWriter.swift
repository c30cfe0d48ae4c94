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

    /// A writer that appends its object to `bytes` (lines written one after another into one
    /// buffer, with no array of their own).
    public init(continuing bytes: [UInt8]) {
        self.bytes = bytes
        self.bytes.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ k: StaticString) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
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

    /// A string whose characters `write` appends itself: plain ASCII with nothing to escape (a
    /// timestamp), written without a `String` first.
    public mutating func field(_ k: StaticString, plainASCII write: (inout [UInt8]) -> Void) {
        key(k)
        bytes.append(UInt8(ascii: "\""))
        write(&bytes)
        bytes.append(UInt8(ascii: "\""))
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

    /// JSON that `write` appends itself (a payload with a device's id written into the job's
    /// shared rendering), with no array of its own.
    public mutating func field(_ k: StaticString, writing write: (inout [UInt8]) -> Void) {
        key(k)
        write(&bytes)
    }

    /// The object closed and a newline added: one line of a JSON Lines file.
    public consuming func line() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0x0A)
        return bytes
    }

    /// An object of string members (a request's headers), each added by `member`, without a
    /// `JSONValue` per member.
    public mutating func field(_ k: StaticString, members: (inout Members) -> Void) {
        key(k)
        var m = Members(bytes: bytes)
        bytes = []
        m.bytes.append(UInt8(ascii: "{"))
        members(&m)
        m.bytes.append(UInt8(ascii: "}"))
        bytes = m.bytes
    }

    /// The members of an object being written by `field(_:members:)`.
    public struct Members {
        fileprivate var bytes: [UInt8]
        private var empty = true

        fileprivate init(bytes: [UInt8]) { self.bytes = bytes }

        public mutating func member(_ name: String, _ value: String) {
            open(name)
            JSONValue.writeString(value, into: &bytes)
        }

        /// A member whose value already is JSON (a rendered message), copied as it is.
        public mutating func member(_ name: String, json: [UInt8]) {
            open(name)
            bytes.append(contentsOf: json)
        }

        /// A member whose value is JSON that `write` appends itself (a rendered message with a
        /// device's id in its place).
        public mutating func member(_ name: String, writing write: (inout [UInt8]) -> Void) {
            open(name)
            write(&bytes)
        }

        /// The separator and `"name":` before a member's value.
        private mutating func open(_ name: String) {
            if !empty { bytes.append(UInt8(ascii: ",")) }
            empty = false
            JSONValue.writeString(name, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
        }
    }
}
