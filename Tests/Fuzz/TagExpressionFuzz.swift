// libFuzzer target: the tag-expression parser never crashes, and what it accepts, printed back,
// parses to the same expression.
@testable import PushspoolCore
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTags(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let e = try? TagExpression.parse(text) else { return 0 }
    // Printed with the fewest parentheses the precedence needs (`!` > `&&` > `||`, left to
    // right), so the print is never nested deeper than the text that was parsed.
    func show(_ e: TagExpression, _ context: Int = 0) -> String {
        let (text, level): (String, Int) = switch e {
        case .tag(let t): (t, 3)
        case .not(let x): ("!" + show(x, 3), 3)
        case .and(let a, let b): (show(a, 2) + " && " + show(b, 3), 2)
        case .or(let a, let b): (show(a, 1) + " || " + show(b, 2), 1)
        }
        return level < context ? "(" + text + ")" : text
    }
    precondition((try? TagExpression.parse(show(e))) == e, "printed back, it parses differently")
    return 0
}
