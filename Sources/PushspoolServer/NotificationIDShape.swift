import PushspoolCore

/// Whether a path's or an event's id can be a notification id at all, checked before the desk is
/// asked: `NotificationID.parse`, the public layout (46 characters of base64url, a known version
/// and platform, a job number), which takes no key and looks nothing up.
///
/// A refusal here says nothing about any notification: the layout is public and no id outside it
/// was ever handed out, so answering `400` (naming the field) rather than the one `404` tells an
/// attacker nothing it did not know. Every id of the right shape, real, forged or foreign, reaches
/// the desk, which does the same work for each.
enum NotificationIDShape {
    static func problem(_ id: String) -> String? {
        guard NotificationID.parse(id) == nil else { return nil }
        return "not a notification id (\(NotificationID.textLength) characters of base64url, as the push carried it)"
    }
}
