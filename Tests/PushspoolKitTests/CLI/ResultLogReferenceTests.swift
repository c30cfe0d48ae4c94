import Testing
import PushspoolCore
@testable import PushspoolKit

/// Issue 46: every line type of a result log has its table in the Result log reference, and each
/// table lists exactly the fields the writer puts on that line (every optional field included).
@Suite struct ResultLogReferenceTests {
    /// Lines of `kind` as the writer encodes them, with every field it can write set: the switch
    /// is exhaustive, so a new line type does not compile until it has a sample here.
    static func samples(_ kind: ResultRecord.Kind) -> [ResultRecord] {
        switch kind {
        case .job:
            return [.job(.init(id: "j", file: "j.json", receivedAt: "2026-01-01T00:00:00Z", pns: ["apns"], targets: 1))]
        case .delivery:
            let targets: [ResultRecord.Delivery.Target] = [.device("d"), .tags("a && b"), .service(field: "topic", value: "news"),
                                                           .service(field: "condition", value: "'a' in topics"),
                                                           .service(field: "channel", value: "Y2hhbm5lbA==")]
            return targets.map {
                .delivery(.init(platform: .apns, provider: "apns", app: "default", target: $0, status: .delivered, attempts: 1,
                                code: "200", reason: "r", providerID: "p", at: "2026-01-01T00:00:00Z"))
            }
        case .registration:
            return [.registration(.init(action: "register", device: "d", platform: "apns", tags: ["t"], at: "2026-01-01T00:00:00Z"))]
        case .hub:
            return [.hub(.init(provider: "azure", action: "put", installation: "i", ok: true, attempts: 1, code: "200", reason: "r",
                               at: "2026-01-01T00:00:00Z"))]
        case .summary:
            var summary = ResultRecord.Summary(id: "j", status: .cancelled, durationMS: 5)
            (summary.capped, summary.matched, summary.notSent, summary.error) = (1, 0, 2, "e")
            return [.summary(summary)]
        case .wave:
            return [.wave(.init(status: "skipped", at: "2026-01-01T00:00:00Z", zones: ["UTC"], devices: 3, reason: "late"))]
        }
    }

    @Test(arguments: ResultRecord.Kind.allCases)
    func everyFieldTheWriterWritesHasARow(kind: ResultRecord.Kind) throws {
        var written: [String] = []
        for record in Self.samples(kind) {
            #expect(record.kind == kind)
            let line = record.line()
            guard case .object(let pairs) = try JSONParser.parse(Array(line.dropLast())) else {
                Issue.record("\(kind): not an object")
                continue
            }
            #expect(pairs.first?.1 == .string(kind.rawValue), "\(kind): the type comes first")
            for (key, _) in pairs where !written.contains(key) { written.append(key) }
            // What the writer wrote, the reader reads back as the same kind.
            #expect(ResultRecord(line: line)?.kind == kind)
        }
        let documented = try ReferenceTables(article: "ResultLogReference.md", header: "\(kind.rawValue) field").firstColumnNames
        let missing = written.filter { !documented.contains($0) }
        #expect(missing.isEmpty, "\(kind) fields the writer writes with no row: \(missing.joined(separator: ", "))")
        let unknown = documented.filter { !written.contains($0) }
        #expect(unknown.isEmpty, "\(kind) rows for fields the writer never writes: \(unknown.joined(separator: ", "))")
    }
}
