import Foundation
import PushspoolCore
import PushspoolHTTP

/// What one Push Kit answer says (`{"code","msg","requestId"}`), parsed once, and each token's
/// result from it.
struct HMSAnswer: Sendable {
    let verdict: HMSClassifier.Verdict
    let code: String?
    let reason: String?
    let requestID: String?

    init(_ response: HTTPResponse, now: Date = Date()) {
        let json = try? JSONParser.parse(response.body)
        // Huawei sends `code` as a string; some gateways as a number.
        let code = json?["code"].flatMap { v -> String? in
            if let s = v.stringValue { return s }
            if case .int(let i) = v { return String(i) }
            return nil
        }
        let msg = json?["msg"]?.stringValue
        verdict = HMSClassifier.verdict(status: response.status, code: code, msg: msg,
                                        retryAfter: response[header: "retry-after"].flatMap { RetryAfter.seconds($0, now: now) })
        self.code = code ?? String(response.status)
        // The message is Huawei's text (a partial answer's is its token list: not copied, it holds handles).
        reason = code == "80100000" ? "some tokens are invalid" : msg.map { TerminalText.escaped(String($0.prefix(200))) }
        requestID = json?["requestId"]?.stringValue
    }

    /// No HTTP answer.
    init(transport result: ProviderResult) {
        verdict = .each(result.disposition)
        code = result.code
        reason = result.reason
        requestID = nil
    }

    func result(for token: String) -> ProviderResult {
        let disposition = verdict.disposition(of: token)
        var why = reason
        if case .partial = verdict { why = disposition == .delivered ? nil : "illegal token (80100000)" }
        return ProviderResult(disposition, code: code, reason: disposition == .delivered ? nil : why, providerID: requestID)
    }
}
