import PushspoolKit

/// Every `print` in the commands goes through `StandardOutput` (buffered, and checked at exit):
/// this shadows the standard library's for the whole module, so a command added later, or a
/// line added to one, cannot print around the check.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    StandardOutput.shared.write(items.map { "\($0)" }.joined(separator: separator) + terminator)
}
