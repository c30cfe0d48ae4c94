import PushspoolKit
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `pushspool webpush keygen [--out FILE]`.
enum WebPushCommands {
    static let defaultKeyFile = "vapid.pem"

    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals == ["keygen"] else { throw CLIError(.usage, "webpush: the only subcommand is `webpush keygen`") }
        let path = args.value("out") ?? defaultKeyFile
        let key: P256Key
        let pem: String
        do {
            key = try P256Key.generate()
            pem = try key.pkcs8PEM()
        } catch {
            throw CLIError(.ioError, "webpush keygen: cannot make a key: \(error)")
        }
        // O_EXCL: an existing key (which every subscription depends on) is never replaced.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let why = errno == EEXIST ? "already exists (a VAPID key is never overwritten: every subscription was made with it)"
                : String(cString: strerror(errno))
            throw CLIError(errno == EEXIST ? .usage : .ioError, "webpush keygen: \(path): \(why)")
        }
        let bytes = Array(pem.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let closed = close(fd)
        guard written == bytes.count, closed == 0 else {
            unlink(path)
            throw CLIError(.ioError, "webpush keygen: \(path): write failed")
        }
        FileHandle.standardError.write(Data("wrote \(path) (mode 600); the public key (applicationServerKey) is:\n".utf8))
        print(Base64URLDecoding.encode(key.publicKey))
        return .ok
    }
}
