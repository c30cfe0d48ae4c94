import PushspoolKit
import CCrypto
import Foundation
import PushspoolCore

/// `config --check` of the `http` section's files, every problem at once, one line each naming
/// the key, the file and, inside it, the line: the users, operators and tokens files must be readable, not
/// by others, with every line well-formed; the TLS certificate and key must parse as PEM (and
/// belong together), the key not readable by others.
package enum FrontDoorChecks {
    package static func problems(_ http: HTTPConfig, resolve: (String) -> URL) -> [String] {
        var problems: [String] = []
        if let path = http.usersFile {
            problems += fileProblems(resolve(path), key: "http.users_file") { HtpasswdFile(parsing: $0).problems }
        }
        if let path = http.operatorsFile {
            // A dashboard nobody can log in to is a mistake, not a choice: refused here.
            problems += fileProblems(resolve(path), key: "http.operators_file") { bytes in
                let file = HtpasswdFile(parsing: bytes)
                return file.problems + (file.hashes.isEmpty && file.problems.isEmpty ? ["holds no account; add one with htpasswd -B"] : [])
            }
        }
        if let path = http.tokensFile {
            problems += fileProblems(resolve(path), key: "http.tokens_file") { BearerTokens(parsing: $0).problems }
        }
        if let cert = http.tlsCertFile, let key = http.tlsKeyFile {
            problems += tlsProblems(cert: resolve(cert), key: resolve(key))
        }
        return problems
    }

    private static func fileProblems(_ url: URL, key: String, _ lines: ([UInt8]) -> [String]) -> [String] {
        do {
            let contents = try CredentialFile.read(url, key: key)
            return lines(contents.bytes).map { "\(key): \(url.path) \($0)" }
        } catch {
            return [error.description]
        }
    }

    static func tlsProblems(cert certURL: URL, key keyURL: URL) -> [String] {
        var problems: [String] = []
        var cert: OpaquePointer?
        var key: OpaquePointer?
        defer {
            if let cert { X509_free(cert) }
            if let key { EVP_PKEY_free(key) }
        }
        do {
            // A certificate is public: only its readability matters.
            let bytes = try FileIO.readAll(certURL)
            cert = withBIO(bytes) { PEM_read_bio_X509($0, nil, nil, nil) }
            if cert == nil { problems.append("http.tls.cert_file: \(certURL.path) holds no PEM certificate") }
        } catch {
            problems.append("http.tls.cert_file: \(certURL.path) cannot be read: \(error)")
        }
        do {
            let contents = try CredentialFile.read(keyURL, key: "http.tls.key_file")
            // The callback refuses a passphrase instead of OpenSSL asking for one on the terminal.
            key = withBIO(contents.bytes) { PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil) }
            if key == nil {
                problems.append("http.tls.key_file: \(keyURL.path) holds no unencrypted PEM private key")
            }
        } catch {
            problems.append(error.description)
        }
        ERR_clear_error()
        if let cert, let key, X509_check_private_key(cert, key) != 1 {
            problems.append("http.tls.key_file: \(keyURL.path) is not the key of the certificate in \(certURL.path)")
            ERR_clear_error()
        }
        return problems
    }

    /// `body` with a read-only memory BIO over `bytes` (the BIO does not copy them).
    private static func withBIO(_ bytes: [UInt8], _ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }
}
