import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

let fuzzSeconds = ProcessInfo.processInfo.environment["PUSHSPOOL_FUZZ_SECONDS"].flatMap(Int.init)

/// The libFuzzer targets in Tests/Fuzz (JSON parser, job parser, tag-expression parser, config
/// parser), each built with `swiftc -sanitize=fuzzer,address` against Sources/PushspoolCore and run
/// from its seed corpus for PUSHSPOOL_FUZZ_SECONDS seconds (CI sets 30). A crash, a sanitizer
/// report or a broken invariant fails the test with libFuzzer's output; the runs reached are printed.
@Suite(.enabled(if: fuzzSeconds != nil, "set PUSHSPOOL_FUZZ_SECONDS to run the fuzz targets (CI runs each for 30 s)"),
       .serialized)
struct FuzzTests {
    static var seconds: Int? { fuzzSeconds }

    @Test(arguments: [("JSONParserFuzz", "json"), ("JobParserFuzz", "job"), ("TagExpressionFuzz", "tags"),
                      ("ConfigParserFuzz", "config")])
    func fuzz(_ target: String, _ corpus: String) throws {
        let dir = TempDir("pushspool-fuzz")
        let fuzzDir = Paths.packageRoot.appendingPathComponent("Tests/Fuzz")
        let core = try Self.sanitizedCore.get()
        let binary = dir.path(target)
        let build = try Self.run("swiftc", ["-sanitize=fuzzer,address", "-parse-as-library", "-O", "-I", core.path, "-L", core.path,
                                            "-lPushspoolCore", "-o", binary, fuzzDir.appendingPathComponent("\(target).swift").path])
        try #require(build.status == 0, "\(build.output)")
        // libFuzzer adds what it finds to the first corpus folder: a copy, not the seeds.
        let work = dir.path("corpus")
        try FileManager.default.copyItem(atPath: fuzzDir.appendingPathComponent("corpus/\(corpus)").path, toPath: work)
        let result = try Self.run(binary, ["-max_total_time=\(Self.seconds ?? 30)", "-rss_limit_mb=2048", "-timeout=10", "-print_funcs=0",
                                      "-artifact_prefix=\(dir.path(""))/", work])
        let summary = result.output.split(separator: "\n").last { $0.hasPrefix("Done ") } ?? "no summary"
        print("fuzz \(target): \(summary)")
        #expect(result.status == 0, "\(result.output.suffix(4000))")
        #expect(summary.hasPrefix("Done "))
    }

    struct BuildFailure: Error, CustomStringConvertible { var description: String }

    /// PushspoolCore built once per test run with the sanitizers, as a static library and its
    /// module (in `.build/fuzz-core/`): each target then compiles only its own file and links it,
    /// instead of every target recompiling the whole core. Built with `-enable-testing`, so the
    /// targets' `@testable import` reaches the parsers' internal checks.
    static let sanitizedCore: Result<URL, BuildFailure> = {
        let out = Paths.packageRoot.appendingPathComponent(".build/fuzz-core")
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let core = Paths.packageRoot.appendingPathComponent("Sources/PushspoolCore")
        let sources = (FileManager.default.enumerator(atPath: core.path)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".swift") }.sorted().map { core.appendingPathComponent($0).path }
        let build = Result {
            try run("swiftc", ["-emit-library", "-static", "-emit-module", "-module-name", "PushspoolCore",
                               "-parse-as-library", "-enable-testing", "-sanitize=fuzzer,address", "-O",
                               "-emit-module-path", out.appendingPathComponent("PushspoolCore.swiftmodule").path,
                               "-o", out.appendingPathComponent("libPushspoolCore.a").path] + sources)
        }
        guard case .success(let b) = build, b.status == 0 else {
            return .failure(BuildFailure(description: "the sanitized PushspoolCore did not build: \((try? build.get().output.suffix(4000)).map(String.init) ?? "\(build)")"))
        }
        return .success(out)
    }()

    /// Output goes to a file, not a pipe (the sanitizer's symbolizer, a child of the fuzzer, may
    /// outlive it holding the pipe), and the child is awaited with waitpid itself (Foundation's
    /// Process leaves such a child a zombie here and never returns from waitUntilExit).
    private static func run(_ executable: String, _ args: [String]) throws -> (status: Int32, output: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-fuzz-\(UUID().uuidString).log").path
        defer { unlink(log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + args).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // A smaller sanitizer quarantine: the default 256 MB, with the corpus and tables, nears
        // the RSS limit on a busy CI machine (libFuzzer then reports out-of-memory).
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = "quarantine_size_mb=32"
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { return (rc, "cannot start \(executable): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }
}
