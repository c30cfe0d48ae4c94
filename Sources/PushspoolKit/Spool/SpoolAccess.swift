import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether this user may use a spool that exists: a spool made by root and then used by a
/// service user must say "permission denied, and here is the fix", not "no spool here" (whose
/// advice, `init`, fails the same way).
package enum SpoolAccess {
    /// nil when this process may search and list `root` and every folder of it that exists,
    /// and write to each of `writing`; else the message naming the path, the user and the fix.
    static func problem(root: URL, writing: [Spool.Folder] = []) -> String? {
        let folders = Spool.Folder.allCases.map { ($0, root.appendingPathComponent($0.rawValue).path) }
        var checks = [(root.path, R_OK | X_OK)]
        for (folder, path) in folders {
            // Only folders that are there: a missing one is init's business (or recreated).
            guard access(path, F_OK) == 0 || errno != ENOENT else { continue }
            checks.append((path, R_OK | X_OK | (writing.contains(folder) ? W_OK : 0)))
        }
        for (path, mode) in checks where access(path, mode) != 0 && (errno == EACCES || errno == EPERM) {
            return message(root: root, path: path, writing: mode & W_OK != 0)
        }
        return nil
    }

    private static func message(root: URL, path: String, writing: Bool) -> String {
        let me = userName(getuid()) ?? "uid \(getuid())"
        var st = stat()
        let owner = stat(root.path, &st) == 0 ? (userName(st.st_uid) ?? "uid \(st.st_uid)") : nil
        let group = owner != nil ? (groupName(st.st_gid) ?? "gid \(st.st_gid)") : nil
        var text = "spool \(root.path) exists but user \(me) may not \(writing ? "write to" : "read") \(path) (permission denied). "
        if let owner, let group {
            text += "Run pushspool as \(owner), the spool's owner (sudo -u \(owner) pushspool …), or give \(me) the spool: "
                + "chown -R \(me) \(root.path); writers and operators: usermod -aG \(group) \(me)"
        } else {
            text += "A folder above it is closed to \(me): run pushspool as the spool's owner, or give \(me) access to the path"
        }
        return text
    }

    package static func userName(_ uid: uid_t) -> String? {
        guard let pw = getpwuid(uid), let name = pw.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    static func groupName(_ gid: gid_t) -> String? {
        guard let gr = getgrgid(gid), let name = gr.pointee.gr_name else { return nil }
        return String(cString: name)
    }
}
