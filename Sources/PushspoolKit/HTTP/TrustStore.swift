import Foundation

/// The CA certificates every HTTPS connection trusts: the system bundle plus, optionally, one
/// extra PEM from config `tls.ca_file` (staging, tests). There is deliberately no way to turn
/// verification off.
///
/// libcurl's `CURLOPT_CAINFO_BLOB` *replaces* its built-in CA file rather than adding to it, so the
/// blob carries the system roots too. The bytes are built once per client and shared (read-only)
/// by every transfer, which hands them to curl without copying.
public final class TrustStore: @unchecked Sendable {
    /// Where distributions keep the system bundle; the first readable one wins.
    static let systemBundlePaths = [
        "/etc/ssl/certs/ca-certificates.crt",              // Debian, Ubuntu, Alpine
        "/etc/pki/tls/certs/ca-bundle.crt",                // Fedora, RHEL
        "/etc/ssl/ca-bundle.pem",                          // openSUSE
        "/etc/ssl/cert.pem",                               // macOS, BSDs
    ]

    /// nil: no extra CA, so libcurl's own default store is used unchanged.
    let pem: UnsafeMutableRawBufferPointer?

    public init(extraCAPEM: String?) {
        guard let extra = extraCAPEM, !extra.isEmpty else {
            pem = nil
            return
        }
        var bytes: [UInt8] = []
        for path in Self.systemBundlePaths {
            if let data = FileManager.default.contents(atPath: path) {
                bytes = Array(data)
                break
            }
        }
        if let last = bytes.last, last != 0x0A { bytes.append(0x0A) }
        bytes += Array(extra.utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        buffer.copyBytes(from: bytes)
        pem = buffer
    }

    deinit { pem?.deallocate() }
}
