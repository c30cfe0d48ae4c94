/// One entry of `providers`: its section, typed. Its key is its name; without `"type"` the name is
/// the type (`"apns"`, `"fcm"`, …), as before named providers.
public enum ProviderConfig: Sendable {
    case apns(APNsConfig)
    case fcm(FCMConfig)
    case wns(WNSConfig)
    case webpush(WebPushConfig)
    case azure(AzureConfig)
    case sandbox(SandboxConfig)
    case hms(HMSConfig)
    case adm(ADMConfig)

    public var kind: ProviderKind {
        switch self {
        case .apns: .apns
        case .fcm: .fcm
        case .wns: .wns
        case .webpush: .webpush
        case .azure: .azure
        case .sandbox: .sandbox
        case .hms: .hms
        case .adm: .adm
        }
    }

    public var apns: APNsConfig? { if case .apns(let c) = self { c } else { nil } }
    public var fcm: FCMConfig? { if case .fcm(let c) = self { c } else { nil } }
    public var wns: WNSConfig? { if case .wns(let c) = self { c } else { nil } }
    public var webpush: WebPushConfig? { if case .webpush(let c) = self { c } else { nil } }
    public var azure: AzureConfig? { if case .azure(let c) = self { c } else { nil } }
    public var sandbox: SandboxConfig? { if case .sandbox(let c) = self { c } else { nil } }
    public var hms: HMSConfig? { if case .hms(let c) = self { c } else { nil } }
    public var adm: ADMConfig? { if case .adm(let c) = self { c } else { nil } }
}

extension Config {
    /// The kind of the provider a route names: a configured provider's type, or `sandbox` (always
    /// there); nil for a name nothing defines.
    public func providerKind(_ name: String) -> ProviderKind? {
        if let p = providers[name] { return p.kind }
        return name == ProviderKind.sandbox.rawValue ? .sandbox : nil
    }

    /// The apps whose routes name `provider`, sorted.
    public func apps(routingTo provider: String) -> [String] {
        apps.filter { $0.value.routes.values.contains(provider) }.keys.sorted()
    }

    /// The topic of `app`'s APNs notifications: its `apns_topic`, else its APNs provider's `topic`.
    public func apnsTopic(of app: String) -> String? {
        guard let a = apps[app] else { return nil }
        if let t = a.apnsTopic { return t }
        return a.routes[.apns].flatMap { providers[$0]?.apns?.topic }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The environment a device of `app` has when it names none: its APNs provider's.
    public func apnsEnvironment(of app: String) -> APNsEnvironment {
        let provider = apps[app]?.routes[.apns].flatMap { providers[$0]?.apns } ?? apns
        return provider?.apnsEnvironment ?? .production
    }
}
