import CIDN2
import Foundation

/// Host names in their ASCII form (IDNA2008 with UTS #46 non-transitional processing, by libidn2):
/// `Bücher.example` and `XN--BCHER-KVA.example` are both `xn--bcher-kva.example`, so an
/// `allowed_hosts` entry and a URL's host compare equal whichever form each was written in.
enum IDNA {
    /// The ASCII form of `host` (lower case), or why it is not a valid internationalised name.
    /// A name with neither non-ASCII characters nor `xn--` labels is returned as given: it has no
    /// other form, and its syntax is the allow-list's to judge.
    static func ascii(_ host: String) -> Result<String, IDNAError> {
        guard host.utf8.contains(where: { $0 >= 0x80 }) || host.lowercased().contains("xn--") else { return .success(host) }
        // A fully qualified name's trailing dot is kept out of the conversion and put back.
        let dot = host.hasSuffix(".")
        let name = dot ? String(host.dropLast()) : host
        var out: UnsafeMutablePointer<UInt8>?
        let rc = name.withCString { input in
            input.withMemoryRebound(to: UInt8.self, capacity: name.utf8.count + 1) { u8 in
                idn2_lookup_u8(u8, &out, Int32(IDN2_NFC_INPUT.rawValue | IDN2_NONTRANSITIONAL.rawValue))
            }
        }
        guard rc == Int32(IDN2_OK.rawValue), let out else { return .failure(IDNAError(reason: String(cString: idn2_strerror(rc)))) }
        defer { idn2_free(out) }
        return .success(String(cString: out) + (dot ? "." : ""))
    }
}

struct IDNAError: Error, Equatable {
    /// libidn2's own words (`string contains invalid punycode data`).
    let reason: String
}
