import Foundation
import PushspoolCore
@testable import PushspoolKit

/// Helpers shared by the registry suites (namespaced: the test module is shared with other areas).
enum RegistryFixture {
    /// A registry in a fresh temporary folder; keep the TempDir alive as long as the registry.
    static func make(_ name: String = "registry.sqlite") throws -> (TempDir, Registry) {
        let dir = TempDir("registry")
        return (dir, try Registry(path: dir.path(name)))
    }

    static func reg(_ id: String?, _ platform: Platform = .apns, _ handle: String, _ tags: [String] = []) -> Registration {
        Registration(id: id, platform: platform, handle: handle, tags: tags)
    }
}
