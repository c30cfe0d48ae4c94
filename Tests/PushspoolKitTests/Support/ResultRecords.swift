import Foundation
@testable import PushspoolKit

/// Tests read result logs as `status` and a resume read them: through `ResultRecord`, never by
/// re-parsing lines of their own.
extension TempDir {
    func records(_ name: String) -> [ResultRecord] {
        (read(name) ?? "").split(separator: "\n").compactMap { ResultRecord(line: Array($0.utf8)) }
    }
}

extension ResultRecord {
    var asJob: JobLine? { if case .job(let j) = self { j } else { nil } }
    var asDelivery: Delivery? { if case .delivery(let d) = self { d } else { nil } }
    var asRegistration: Registration? { if case .registration(let r) = self { r } else { nil } }
    var asSummary: Summary? { if case .summary(let s) = self { s } else { nil } }
}

extension ResultRecord.Delivery {
    /// The device id, for a device target.
    var device: String? { if case .device(let id) = target { id } else { nil } }
}
