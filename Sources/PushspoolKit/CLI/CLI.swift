import Foundation

public enum CLI {
    public static func main(_ arguments: [String]) -> Never {
        FileHandle.standardError.write(Data("pushspool: not yet implemented\n".utf8))
        exit(70)
    }
}
