import Foundation
import PushspoolCore

/// An iOS 18 broadcast channel, as the registry keeps it: created through Apple's channel
/// management API for one app (its bundle id) in one APNs environment.
public struct APNsChannel: Sendable, Equatable {
    /// Apple's channel id (base64, as `apns-channel-id` carries it).
    public var id: String
    public var app: String
    public var environment: APNsEnvironment
    /// `message-storage-policy`: 0 no message stored, 1 the most recent one kept for offline devices.
    public var storagePolicy: Int
    public var createdAt: Date

    public init(id: String, app: String, environment: APNsEnvironment, storagePolicy: Int, createdAt: Date) {
        self.id = id
        self.app = app
        self.environment = environment
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
    }
}

/// Each app's broadcast channels, kept in the registry so that `apns channels list` and the
/// validation of an `apns_channel` job need no round trip to Apple. `--refresh` reconciles them
/// with Apple's list (`replaceChannels`).
public protocol APNsChannelStore: AnyObject, Sendable {
    /// Records a channel Apple created (or confirmed); an existing one is replaced.
    func saveChannel(_ channel: APNsChannel) throws(RegistryError)
    /// True when it was there.
    @discardableResult
    func removeChannel(app: String, id: String) throws(RegistryError) -> Bool
    /// The app's channels, oldest first.
    func channels(app: String) throws(RegistryError) -> [APNsChannel]
    func channel(app: String, id: String) throws(RegistryError) -> APNsChannel?
    /// The app's channels in `environment` become exactly `channels` (Apple's list), in one
    /// transaction: ones Apple no longer has go, new ones come in, known ones keep their time.
    func replaceChannels(app: String, environment: APNsEnvironment, with channels: [APNsChannel]) throws(RegistryError)
}

/// The channel table's definitions, one per backend.
enum APNsChannelTables {
    static let sqlite = """
        CREATE TABLE apns_channels(
            app TEXT NOT NULL,
            id TEXT NOT NULL,
            environment TEXT NOT NULL,
            storage_policy INTEGER NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY(app, id)) WITHOUT ROWID;
        """
    static let postgres = """
        CREATE TABLE apns_channels(
            app text NOT NULL,
            id text NOT NULL,
            environment text NOT NULL,
            storage_policy integer NOT NULL,
            created_at double precision NOT NULL,
            PRIMARY KEY(app, id));
        """
}
