import Foundation

/// The tables of a reference article, read as its readers see them: the rows of every table whose
/// first header cell is `header`, split into cells (`\|` is a `|` inside a cell).
struct ReferenceTables {
    let rows: [[String]]

    init(article: String, header: String) throws {
        let text = try DocumentationLinksTests.text("\(DocumentationLinksTests.catalog)/\(article)")
        var rows: [[String]] = []
        /// nil outside a table; whether the table we are in is one of ours.
        var ours: Bool?
        for line in DocumentationLinksTests.prose(text).components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("|") else { ours = nil; continue }
            let cells = Self.cells(trimmed)
            guard let inOurs = ours else { ours = cells.first == header; continue }   // the header row
            if cells.allSatisfy({ $0.allSatisfy { $0 == "-" || $0 == ":" } }) { continue }   // the separator row
            if inOurs { rows.append(cells) }
        }
        self.rows = rows
    }

    /// A row's cells, trimmed, outer pipes dropped.
    static func cells(_ line: String) -> [String] {
        var cells: [String] = [], cell = "", chars = Array(line.dropFirst())[...]
        while let c = chars.popFirst() {
            if c == "\\", chars.first == "|" { cell.append("|"); chars.removeFirst(); continue }
            if c == "|" { cells.append(cell.trimmingCharacters(in: .whitespaces)); cell = ""; continue }
            cell.append(c)
        }
        return cells
    }

    /// The names in backticks of a cell: `` `a` / `b` `` → a, b.
    static func names(_ cell: String) -> [String] {
        let parts = cell.components(separatedBy: "`")
        return stride(from: 1, to: parts.count, by: 2).map { parts[$0] }
    }

    /// The backticked names in the first cell of every row.
    var firstColumnNames: [String] { rows.flatMap { Self.names($0.first ?? "") } }
}
