import PushspoolKit
import PushspoolCore

/// The config's apps as the front door serves them: which app a request may name (the same check
/// `register --app` makes), and how a device shows its app and environment.
public struct ServedApps: Sendable {
    let defaults: RegistryDefaults
    /// The config has `apps`: devices show their app and (APNs) environment, as `pushspool devices` does.
    let several: Bool

    public init(_ config: Config) {
        self.init(defaults: RegistryDefaults(config), several: config.appsSection != nil)
    }

    public init(defaults: RegistryDefaults = RegistryDefaults(), several: Bool = false) {
        self.defaults = defaults
        self.several = several
    }

    /// Why `app` is not an app of the config, or nil.
    func problem(_ app: String) -> String? { defaults.appProblem(app) }

    /// A device as the device routes show it: `Device.listing`, with its app once the config has
    /// apps (or the device is not the implicit app's), then its environment, and an APNs token
    /// kind other than `device`.
    func listing(_ device: Device) -> [(String, JSONValue)] {
        var pairs = device.listing
        var extra: [(String, JSONValue)] = []
        if several || device.app != AppConfig.implicitID { extra.append(("app", .string(device.app))) }
        if several, let env = device.environment { extra.append(("environment", .string(env.rawValue))) }
        if device.tokenKind != .device { extra.append(("token_kind", .string(device.tokenKind.rawValue))) }
        pairs.insert(contentsOf: extra, at: 2)
        return pairs
    }
}
