import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// A service's canonical id (ADM) replaces the handle sent, on both backends.
@Suite struct RegistryHandleChangeTests {
    @Test(arguments: RegistryBackend.allCases)
    func canonicalHandleReplacesTheOneSent(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("d", .adm, "old-1", ["t"]), now: Date(timeIntervalSince1970: 1000))
        #expect(try registry.replaceHandle(HandleChange(id: "d", handle: "old-1", canonical: "new-1"), now: Date(timeIntervalSince1970: 2000)))
        #expect(try registry.device(id: "d")?.handle == "new-1")
        #expect(try registry.device(id: "d")?.tags == ["t"])
        // The device re-registered with yet another handle meanwhile: a late answer changes nothing.
        #expect(try !registry.replaceHandle(HandleChange(id: "d", handle: "old-1", canonical: "new-2"), now: Date()))
        #expect(try registry.device(id: "d")?.handle == "new-1")
    }

    @Test(arguments: RegistryBackend.allCases)
    func aDeviceAlreadyHoldingTheNewHandleKeepsItAndTheOldRowGoes(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("old", .adm, "old-1", ["t"]))
        try registry.upsert(RegistryFixture.reg("new", .adm, "new-1", ["t"]))
        #expect(try registry.replaceHandle(HandleChange(id: "old", handle: "old-1", canonical: "new-1"), now: Date()))
        #expect(try registry.device(id: "old") == nil)
        #expect(try registry.device(id: "new")?.handle == "new-1")
    }
}
