/// Which of Apple's tokens an APNs registration's handle is (`token_kind`; default `device`).
/// Each push type is delivered to the one kind of token that serves it: an alert to the device
/// token, a VoIP push to the PushKit token, a Live Activity update to that activity's own token
/// and its start to the app's push-to-start token. A job reaches only the registrations of that
/// kind (the registry's audience query filters on it).
public enum APNsTokenKind: String, Sendable, Equatable, Hashable, CaseIterable {
    case device, voip, liveactivity, pushtostart, location, complication, fileprovider, pushtotalk, widgets

    /// `device, voip, …` for messages.
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")

    /// The kind of token a push of `type` goes to (for `liveactivity`, by its event: `start` to
    /// push-to-start tokens, `update` and `end` to the activity's own).
    public static func serving(_ type: APNsPushType, event: LiveActivity.Event?) -> APNsTokenKind {
        switch type {
        case .alert, .background: return .device
        case .voip: return .voip
        case .liveactivity: return event == .start ? .pushtostart : .liveactivity
        case .location: return .location
        case .complication: return .complication
        case .fileprovider: return .fileprovider
        case .pushtotalk: return .pushtotalk
        case .widgets: return .widgets
        }
    }
}

extension NativeFields {
    /// The kind of APNs token this job's push goes to.
    public var tokenKind: APNsTokenKind { APNsTokenKind.serving(pushType, event: liveActivity?.event) }
}
