import Foundation

/// A strict reader of the Prometheus text exposition format (version 0.0.4), as a scraper or
/// node_exporter's textfile collector applies it: metric and label name syntax, escaped label
/// values, at most one HELP and one TYPE per family and before its samples, each family's
/// samples together, histogram buckets by `le` ascending, cumulative, ending with `+Inf` equal
/// to `_count`, with `_sum` and `_count` present. Throws on the first violation.
struct Exposition {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }
    struct Violation: Error, CustomStringConvertible { var description: String }

    var types: [String: String] = [:]
    var samples: [Sample] = []

    /// The sample of `name` with `labels` (besides the labels every sample of a process's
    /// metrics file carries: `spool_instance`, `process`).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels.filter { !Self.processLabels.contains($0.key) } == labels }?.value
    }

    static let processLabels: Set<String> = ["spool_instance", "process"]

    func sum(_ name: String, where match: [String: String] = [:]) -> Double {
        samples.filter { s in s.name == name && match.allSatisfy { s.labels[$0.key] == $0.value } }.reduce(0) { $0 + $1.value }
    }

    static let metricName = try! NSRegularExpression(pattern: "^[a-zA-Z_:][a-zA-Z0-9_:]*$")
    static let labelName = try! NSRegularExpression(pattern: "^[a-zA-Z_][a-zA-Z0-9_]*$")

    static func matches(_ re: NSRegularExpression, _ s: String) -> Bool {
        re.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
    }

    init(_ text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else { throw Violation(description: "the last line does not end with a newline") }
        var help: Set<String> = []
        var finished: Set<String> = []      // families whose samples have ended
        var current: String?
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let line = String(raw)
            func fail(_ why: String) -> Violation { Violation(description: "line \(n + 1): \(why): \(line)") }
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true).map(String.init)
                guard parts.count >= 3, parts[0] == "#", ["HELP", "TYPE"].contains(parts[1]) else { continue }   // a comment
                let name = parts[2]
                guard Self.matches(Self.metricName, name) else { throw fail("bad metric name") }
                if finished.contains(name) || current == name && parts[1] == "TYPE" && types[name] != nil {
                    throw fail("HELP/TYPE after the family's samples")
                }
                if parts[1] == "HELP" {
                    guard help.insert(name).inserted else { throw fail("second HELP for \(name)") }
                } else {
                    guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else { throw fail("bad TYPE") }
                    guard types[name] == nil else { throw fail("second TYPE for \(name)") }
                    if samples.contains(where: { Self.family($0.name, types) == name }) { throw fail("TYPE after samples") }
                    types[name] = parts[3]
                }
                continue
            }
            let sample = try Self.parseSample(line, fail)
            let family = Self.family(sample.name, types)
            if family != current {
                if let current { finished.insert(current) }
                guard !finished.contains(family) else { throw fail("samples of \(family) are not together") }
                current = family
            }
            if types[family] == "counter", sample.value < 0 { throw fail("negative counter") }
            samples.append(sample)
        }
        try checkHistograms()
    }

    /// The family a sample belongs to: `x_bucket`/`x_sum`/`x_count` belong to histogram `x`.
    static func family(_ name: String, _ types: [String: String]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" || types[base] == "summary" { return base }
        }
        return name
    }

    static func parseSample(_ line: String, _ fail: (String) -> Violation) throws -> Sample {
        var i = line.startIndex
        while i < line.endIndex, line[i] != "{", line[i] != " " { i = line.index(after: i) }
        let name = String(line[..<i])
        guard matches(metricName, name) else { throw fail("bad metric name") }
        var labels: [String: String] = [:]
        if i < line.endIndex, line[i] == "{" {
            i = line.index(after: i)
            while true {
                guard i < line.endIndex else { throw fail("unterminated labels") }
                if line[i] == "}" { i = line.index(after: i); break }
                var j = i
                while j < line.endIndex, line[j] != "=" { j = line.index(after: j) }
                let key = String(line[i..<j])
                guard matches(labelName, key), j < line.endIndex else { throw fail("bad label name \(key)") }
                j = line.index(after: j)
                guard j < line.endIndex, line[j] == "\"" else { throw fail("label value not quoted") }
                j = line.index(after: j)
                var value = ""
                while true {
                    guard j < line.endIndex else { throw fail("unterminated label value") }
                    let c = line[j]
                    if c == "\"" { break }
                    if c == "\\" {
                        j = line.index(after: j)
                        guard j < line.endIndex else { throw fail("dangling escape") }
                        switch line[j] {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw fail("bad escape")
                        }
                    } else {
                        value.append(c)
                    }
                    j = line.index(after: j)
                }
                guard labels.updateValue(value, forKey: key) == nil else { throw fail("label \(key) twice") }
                i = line.index(after: j)
                if i < line.endIndex, line[i] == "," { i = line.index(after: i) }
            }
        }
        let rest = line[i...].split(separator: " ").map(String.init)
        guard rest.count == 1 || rest.count == 2, line[i...].hasPrefix(" ") else { throw fail("expected ' value [timestamp]'") }
        let value: Double
        switch rest[0] {
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        case "NaN": value = .nan
        default:
            guard let v = Double(rest[0]) else { throw fail("bad value") }
            value = v
        }
        if rest.count == 2, Int64(rest[1]) == nil { throw fail("bad timestamp") }
        return Sample(name: name, labels: labels, value: value)
    }

    private func checkHistograms() throws {
        for (name, type) in types where type == "histogram" {
            var series: [[String: String]: [(Double, Double)]] = [:]
            for s in samples where s.name == name + "_bucket" {
                guard let le = s.labels["le"] else { throw Violation(description: "\(name)_bucket without le") }
                let bound = le == "+Inf" ? Double.infinity : Double(le)
                guard let bound else { throw Violation(description: "\(name): bad le \(le)") }
                var key = s.labels
                key["le"] = nil
                series[key, default: []].append((bound, s.value))
            }
            for (labels, buckets) in series {
                guard buckets.map(\.0) == buckets.map(\.0).sorted() else { throw Violation(description: "\(name)\(labels): buckets not in le order") }
                for k in buckets.indices.dropFirst() where buckets[k].1 < buckets[k - 1].1 {
                    throw Violation(description: "\(name)\(labels): buckets not cumulative")
                }
                guard let inf = buckets.last, inf.0 == .infinity else { throw Violation(description: "\(name)\(labels): no +Inf bucket") }
                func exact(_ n: String) -> Double? { samples.first { $0.name == n && $0.labels == labels }?.value }
                guard let count = exact(name + "_count"), exact(name + "_sum") != nil else {
                    throw Violation(description: "\(name)\(labels): _sum or _count missing")
                }
                guard count == inf.1 else { throw Violation(description: "\(name)\(labels): +Inf bucket \(inf.1) ≠ _count \(count)") }
            }
        }
    }
}
