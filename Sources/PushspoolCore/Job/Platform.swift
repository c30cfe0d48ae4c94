/// A push platform a job can target. `gcm` is FCM's retired name and parses as `.fcm`; `web` is
/// browsers (Web Push), whose handle is a PushSubscription; `hms` is Huawei Push Kit (phones
/// without Google services), `adm` Amazon Device Messaging (Fire tablets and TV).
public enum Platform: String, Sendable, Hashable, CaseIterable, Comparable {
    case apns, fcm, wns, web, hms, adm

    /// Parses a platform name as written in jobs, configs and CLI flags (`gcm` → `.fcm`).
    public init?(name: String) {
        if name == "gcm" { self = .fcm; return }
        self.init(rawValue: name)
    }

    public static func < (lhs: Platform, rhs: Platform) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The names accepted by `init(name:)`, for error messages.
    public static let acceptedNames = "apns, fcm, gcm, wns, web, hms, adm"
}

extension Platform {
    /// Longest handle accepted on any platform (FCM tokens run to a few hundred characters, WNS
    /// channel URIs stay well under 2 KiB).
    public static let maxHandleBytes = 4096

    /// Why `handle` cannot be a device handle on this platform, or nil. As strict as each service
    /// documents and no stricter: APNs, an even number (64 or more: Apple says the length may
    /// change) of hex digits; FCM, which publishes no format, only its character set and size;
    /// WNS, an absolute https URI with a host; web, a PushSubscription's JSON text (see
    /// `WebPushSubscription`; `canonicalHandle` gives the form the registry stores).
    public func handleProblem(_ handle: String) -> String? {
        let bytes = handle.utf8
        guard !bytes.isEmpty else { return "must not be empty" }
        guard bytes.count <= Self.maxHandleBytes else { return "longer than \(Self.maxHandleBytes) bytes" }
        switch self {
        case .apns:
            let hex = bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }
            guard hex, bytes.count >= 64, bytes.count % 2 == 0 else {
                return "an APNs device token must be an even number (64 or more) of hex digits"
            }
        case .fcm:
            let allowed = bytes.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ":") || b == UInt8(ascii: ".")
            }
            guard allowed else { return "an FCM registration token holds only letters, digits and - _ : ." }
        case .hms:
            // Huawei publishes no format; tokens go into a JSON array, so anything printable passes.
            guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                return "an HMS push token holds only printable ASCII characters without spaces"
            }
        case .adm:
            // The registration id goes into the send URL's path: only characters a path segment
            // carries as they are (Amazon's ids are `amzn1.adm-registration.v3.` and base64).
            let allowed = bytes.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "~")
                    || b == UInt8(ascii: "+") || b == UInt8(ascii: "=") || b == UInt8(ascii: ":")
            }
            guard allowed else { return "an ADM registration id holds only letters, digits and - _ . ~ + = :" }
        case .wns:
            let authority = bytes.dropFirst(8).prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") }
            guard handle.hasPrefix("https://"), !authority.isEmpty, !authority.contains(UInt8(ascii: "@")),
                  !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
                return "a WNS channel URI must be an absolute https URL, e.g. https://….notify.windows.com/?token=…"
            }
        case .web:
            do {
                _ = try WebPushSubscription.parse(text: handle)
            } catch {
                return error.description
            }
        }
        return nil
    }

    /// The form the registry stores `handle` in, so that one device is one handle however it
    /// was written: compact JSON for a web subscription; lowercase hex for an APNs token (apps
    /// print tokens in either case: the tutorial's iOS client sends uppercase); the handle itself
    /// elsewhere. Call after `handleProblem` returned nil.
    public func canonicalHandle(_ handle: String) -> String {
        switch self {
        case .web: (try? WebPushSubscription.parse(text: handle))?.canonicalJSON ?? handle
        case .apns: handle.lowercased()
        case .fcm, .wns, .hms, .adm: handle
        }
    }

    /// The stored form of a handle given without its platform (a lookup or unregister by
    /// handle): a subscription's JSON made canonical, an APNs token (64 or more hex digits,
    /// which no other platform's handle is) lowercased.
    public static func canonicalLookupHandle(_ handle: String) -> String {
        if handle.hasPrefix("{") { return Platform.web.canonicalHandle(handle) }
        if Platform.apns.handleProblem(handle) == nil { return handle.lowercased() }
        return handle
    }
}
