import PushspoolCore

/// The client's address behind reverse proxies: `X-Forwarded-For` read only when the connection
/// comes from one of `http.trusted_proxies`.
///
/// Each proxy appends the address it was connected from, so the list is read from the right: the
/// entries added by trusted proxies are skipped, and the first address that is not one of them is
/// the client. Everything left of it was written by the client (or its own proxies) and could say
/// anything. A last entry that is not an address (a misconfigured proxy) leaves the proxy's own
/// address in force. From any other address the header is ignored: anyone can send it.
enum ForwardedFor {
    static func client(remote: String, header: String?, trusted: [AddressRange]) -> String {
        guard let header, !trusted.isEmpty, isTrusted(remote, trusted) else { return remote }
        var client = remote
        for entry in header.split(separator: ",").reversed() {
            guard let address = address(entry) else { return client }
            client = address
            if !isTrusted(address, trusted) { return address }
        }
        return client
    }

    static func isTrusted(_ address: String, _ trusted: [AddressRange]) -> Bool {
        trusted.contains { $0.contains(address) }
    }

    /// One entry: an address, optionally `[v6]`, `[v6]:port` or `v4:port` (some proxies add the port).
    static func address(_ entry: Substring) -> String? {
        var text = entry.trimmingPrefix(while: { $0 == " " || $0 == "\t" })
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            text = text[text.index(after: text.startIndex)..<close]
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = text[..<colon]
        }
        let address = String(text)
        return AddressRange.bytes(address) == nil ? nil : address
    }
}
