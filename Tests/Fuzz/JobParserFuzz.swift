// libFuzzer target: the job parser never crashes on any bytes, reports problems instead, and a
// job it accepts has a valid id and at least one platform.
@testable import PushspoolCore
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJob(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let job = try? JobParser.parse(bytes, fileName: "fuzz.json") else { return 0 }
    precondition(Identifier.isValidJobID(job.id), "accepted an invalid id")
    if case .send(let send) = job.kind { precondition(!send.platforms.isEmpty, "a send job without platforms") }
    return 0
}
