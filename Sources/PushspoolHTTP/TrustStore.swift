import CCurl
import Foundation

/// The CA certificates every HTTPS connection trusts: the system roots plus, optionally, one
/// extra PEM from config `tls.ca_file` (staging, tests). There is deliberately no way to turn
/// verification off.
///
/// Preferred form: the system's hashed certificate directory (`CURLOPT_CAPATH`, OpenSSL looks a
/// root up by subject hash only when a chain needs it) plus the extra PEM as a small
/// `CURLOPT_CAINFO_BLOB`. That keeps both costs off the hot path: libcurl compares the blob with
/// each connection's copy on every reuse check (a 200 KB system bundle there costs ~10 µs per
/// request) and parses a CA file on every new connection (one per rotation window).
/// Without a hashed directory: the system bundle and the extra PEM concatenated into the blob,
/// because a blob *replaces* libcurl's built-in CA file instead of adding to it.
public final class TrustStore: @unchecked Sendable {
    /// Where distributions keep the system bundle; the first readable one wins.
    static let systemBundlePaths = [
        "/etc/ssl/certs/ca-certificates.crt",              // Debian, Ubuntu, Alpine
        "/etc/pki/tls/certs/ca-bundle.crt",                // Fedora, RHEL
        "/etc/ssl/ca-bundle.pem",                          // openSUSE
        "/etc/ssl/cert.pem",                               // macOS, BSDs
    ]
    static let systemHashedDirectory = "/etc/ssl/certs"

    /// A hashed directory of roots (`<subject-hash>.0` files), or nil.
    let caPath: String?
    /// PEM bytes handed to curl without copying; nil: curl's own default for this part.
    let pem: UnsafeMutableRawBufferPointer?

    public convenience init(extraCAPEM: String?) {
        self.init(extraCAPEM: extraCAPEM, hashedDirectory: Self.hasHashedCerts(Self.systemHashedDirectory) ? Self.systemHashedDirectory : nil)
    }

    /// `hashedDirectory`: the roots as a hashed directory (tests pass their own).
    init(extraCAPEM: String?, hashedDirectory: String?) {
        caPath = hashedDirectory
        var bytes: [UInt8] = []
        if let extra = extraCAPEM, !extra.isEmpty {
            if hashedDirectory == nil {
                for path in Self.systemBundlePaths {
                    if let data = FileManager.default.contents(atPath: path) {
                        bytes = Array(data)
                        break
                    }
                }
                if let last = bytes.last, last != 0x0A { bytes.append(0x0A) }
            }
            bytes += Array(extra.utf8)
        }
        if bytes.isEmpty {
            pem = nil
        } else {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            buffer.copyBytes(from: bytes)
            pem = buffer
        }
    }

    deinit { pem?.deallocate() }

    /// Applies this trust to an easy handle. Verification itself is always on.
    func apply(to easy: UnsafeMutableRawPointer) {
        _ = ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        if let caPath {
            _ = ccurl_easy_setopt_str(easy, CURLOPT_CAPATH, caPath)
            // Not the bundle file as well: the directory holds the same roots, parsed lazily.
            _ = ccurl_easy_setopt_ptr(easy, CURLOPT_CAINFO, nil)
        }
        if let pem {
            _ = ccurl_easy_setopt_blob_nocopy(easy, CURLOPT_CAINFO_BLOB, pem.baseAddress, pem.count)
        }
    }

    static func hasHashedCerts(_ dir: String) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return false }
        return names.contains { $0.count == 10 && $0.hasSuffix(".0") }
    }
}
