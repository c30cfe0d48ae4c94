import Testing
import PushspoolCore
import PushspoolHTTP
@testable import PushspoolKit

/// What a transport failure (no HTTP answer) means, per provider, through the one mapping
/// (`SendOpening.transportFailure`): a passing failure is retried everywhere; a permanent one
/// (TLS verification, a malformed URL) pauses a provider whose endpoint is configuration (APNs,
/// FCM, the hub) and refuses only the target where the device names its own endpoint (WNS, Web
/// Push).
@Suite struct TransportFailureTests {
    static let passing = HTTPTransportError("connection reset")
    static let permanent = HTTPTransportError("certificate verify failed", isPermanent: true)

    @Test func configuredEndpointsPause() {
        #expect(FCMProvider.classify(.failure(Self.permanent)) == ProviderResult(.credentialsBroken, code: "transport", reason: "certificate verify failed"))
        #expect(APNsClassifier.disposition(transport: Self.permanent) == .credentialsBroken)
        #expect(SendOpening.transportFailure(Self.permanent, endpoint: .configured).disposition == .credentialsBroken)
    }

    @Test func perDeviceEndpointsRefuseTheTargetOnly() {
        #expect(WNSProvider.classify(.failure(Self.permanent)) == ProviderResult(.rejected, code: "transport", reason: "certificate verify failed"))
        #expect(WebPushProvider.classify(.failure(Self.permanent)) == ProviderResult(.rejected, code: "transport", reason: "certificate verify failed"))
        #expect(SendOpening.transportFailure(Self.permanent, endpoint: .perDevice).disposition == .rejected)
    }

    @Test func passingFailuresAreRetriedEverywhere() {
        let retry = ProviderResult(.retry(after: nil), code: "transport", reason: "connection reset")
        #expect(FCMProvider.classify(.failure(Self.passing)) == retry)
        #expect(WNSProvider.classify(.failure(Self.passing)) == retry)
        #expect(WebPushProvider.classify(.failure(Self.passing)) == retry)
        #expect(APNsClassifier.disposition(transport: Self.passing) == .retry(after: nil))
        #expect(SendOpening.transportFailure(Self.passing, endpoint: .configured) == retry)
        #expect(SendOpening.transportFailure(Self.passing, endpoint: .perDevice) == retry)
    }
}
