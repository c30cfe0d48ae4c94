import Foundation
import Testing

/// The README keeps the user's path and links to the reference and design articles of the DocC catalog, which
/// link to each other and back; those links are relative Markdown links (so they work on GitHub),
/// which `docc convert` does not check. A renamed heading or a moved article must fail here.
@Suite struct DocumentationLinksTests {
    static let catalog = "Sources/PushspoolKit/PushspoolKit.docc"
    static let articles = ["PushspoolKit.md", "Architecture.md", "FailureSemantics.md", "Providers.md", "Benchmarks.md", "CapacityModel.md",
                            "JobFileReference.md", "ResultLogReference.md", "RegistrationsReference.md", "CommandLineReference.md", "ConfigurationReference.md", "ProviderSetup.md", "HTTPFrontDoor.md", "ContractDifferences.md", "SeveralAppsGuide.md", "ClocksGuide.md", "WebhooksGuide.md", "SecurePushGuide.md", "DashboardGuide.md", "SeveralHostsGuide.md", "WebPushGuide.md", "AzureHubGuide.md", "Operations.md"]

    static func text(_ path: String) throws -> String {
        try String(contentsOf: Paths.packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The text outside fenced code blocks, where Markdown links and headings live.
    static func prose(_ text: String) -> String {
        var inFence = false
        return text.components(separatedBy: "\n").filter { line in
            if line.hasPrefix("```") { inFence.toggle(); return false }
            return !inFence
        }.joined(separator: "\n")
    }

    /// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
    /// spaces turned into `-`.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().unicodeScalars.compactMap { c -> Character? in
            if c == " " { return "-" }
            if c == "-" || c == "_" || CharacterSet.alphanumerics.contains(c) { return Character(c) }
            return nil
        })
    }

    static func anchors(_ text: String) -> Set<String> {
        Set(prose(text).components(separatedBy: "\n").compactMap { line -> String? in
            guard line.hasPrefix("#") else { return nil }
            return anchor(line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces))
        })
    }

    /// Every `[text](target)` that is neither a web address nor a DocC `doc:` link.
    static func relativeLinks(_ text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        let prose = prose(text)
        return regex.matches(in: prose, range: NSRange(prose.startIndex..., in: prose)).compactMap { m in
            let link = String(prose[Range(m.range(at: 1), in: prose)!])
            return link.hasPrefix("http:") || link.hasPrefix("https:") || link.hasPrefix("doc:") || link.hasPrefix("mailto:") ? nil : link
        }
    }

    /// A relative path from a folder of the package (its components), `..` resolved; nil when it
    /// leads out of the repository, which must stand alone.
    static func resolve(_ link: String, from folder: [String]) -> String? {
        var components = folder
        for part in link.split(separator: "/") {
            if part == ".." {
                guard !components.isEmpty else { return nil }
                components.removeLast()
            } else if part != "." {
                components.append(String(part))
            }
        }
        return components.joined(separator: "/")
    }

    @Test func everyRelativeLinkReachesAFileAndHeading() throws {
        let documents = ["README.md", "Sources/pushspool-bench/README.md"] + Self.articles.map { "\(Self.catalog)/\($0)" }
        var checked = 0
        for document in documents {
            // An unclosed fence turns the rest of a page into code (and hides its links and headings).
            let fences = try Self.text(document).components(separatedBy: "\n").filter { $0.hasPrefix("```") }.count
            #expect(fences % 2 == 0, "\(document): a code block is not closed")
            let base = document.split(separator: "/").dropLast().map(String.init)
            for link in Self.relativeLinks(try Self.text(document)) {
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard let target = parts[0].isEmpty ? document : Self.resolve(parts[0], from: base) else {
                    Issue.record("\(document): \(link) leads out of the repository")
                    continue
                }
                let path = Paths.packageRoot.appendingPathComponent(target).path
                guard FileManager.default.fileExists(atPath: path) else {
                    Issue.record("\(document): \(link) names \(target), which does not exist")
                    continue
                }
                if parts.count == 2, target.hasSuffix(".md") {
                    #expect(Self.anchors(try Self.text(target)).contains(parts[1]), "\(document): \(link): no such heading in \(target)")
                }
                checked += 1
            }
        }
        #expect(checked >= 20, "\(checked) links checked")
    }

    @Test func theReadmeLinksEveryArticleAndEveryArticleIsInTheCatalog() throws {
        let readme = try Self.text("README.md")
        for article in Self.articles.dropFirst() {
            #expect(readme.contains("](\(Self.catalog)/\(article)"), "README links \(article)")
        }
        let landing = try Self.text("\(Self.catalog)/PushspoolKit.md")
        #expect(landing.hasPrefix("# ``PushspoolKit``\n"), "the landing page documents the module")
        for article in Self.articles.dropFirst() {
            #expect(landing.contains("](\(article))"), "the landing page links \(article)")
        }
    }

    /// Issue 46: the differences from the tutorial are the few a user trips on (at most 20, one
    /// numbered entry each); what pushspool only adds lives in the reference pages.
    @Test func theDifferencesAreAtMostTwenty() throws {
        let lines = try Self.text("\(Self.catalog)/ContractDifferences.md").components(separatedBy: "\n")
        let entries = lines.filter { $0.range(of: #"^\d+\. \*\*"#, options: .regularExpression) != nil }
        #expect(entries.count >= 10 && entries.count <= 20, "\(entries.count) entries")
        #expect(!lines.contains { $0.hasPrefix("- **") }, "every entry is numbered")
    }

    @Test func anchorsAreGitHubs() {
        #expect(Self.anchor("HTTP front door (`pushspool serve`)") == "http-front-door-pushspool-serve")
        #expect(Self.anchor("Result log `results/<job-id>.jsonl`") == "result-log-resultsjob-idjsonl")
        #expect(Self.anchor("Several hosts: a PostgreSQL registry") == "several-hosts-a-postgresql-registry")
    }
}
