import Foundation

/// Values made from short texts that repeat from row to row (a registry's few platforms, apps,
/// token kinds; a campaign's few languages), found again by their bytes: a text seen before
/// makes no String and no hash. The first 16 distinct texts are found by a scan of their bytes,
/// up to 256 more by a dictionary; past that each is made anew, so memory stays bounded.
struct RepeatedTexts<Value: Sendable>: Sendable {
    /// The first 16 texts' bytes, one after the other; `entries` says where each one is.
    private var names: [UInt8] = []
    private var entries: [(start: Int, count: Int, value: Value)] = []
    private var more: [String: Value] = [:]

    /// The value for `bytes`, made by `make` the first time (nil: none, and nothing remembered).
    mutating func value(_ bytes: UnsafeBufferPointer<UInt8>, make: (String) -> Value?) -> Value? {
        let found: Int? = names.withUnsafeBufferPointer { known in
            entries.firstIndex { e in
                e.count == bytes.count && (e.count == 0 || memcmp(known.baseAddress! + e.start, bytes.baseAddress!, e.count) == 0)
            }
        }
        if let found { return entries[found].value }
        let text = String(decoding: bytes, as: UTF8.self)
        if let known = more[text] { return known }
        guard let value = make(text) else { return nil }
        if entries.count < 16 {
            entries.append((names.count, bytes.count, value))
            names.append(contentsOf: bytes)
        } else if more.count < 256 {
            more[text] = value
        }
        return value
    }
}
