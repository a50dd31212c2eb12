import Foundation
import MacroFuzz
import MacroTestSupport
import Testing

/// The checked-in fuzz corpus (seeds, and every crash a fuzzer found, kept as a regression
/// input) replayed through the fuzz targets' checks on each test run. A broken invariant fails
/// this test, naming the input and what broke; the other inputs still run.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    @Test(arguments: ["rpc-line", "macro-file"])
    func theCorpusReplaysCleanly(_ target: String) throws {
        let check = try #require(FuzzTargets.checks[target])
        let directory = repositoryRoot + "/Fuzz/corpus/" + target
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files.count >= 9)
        for file in files {
            let data = try #require(FileManager.default.contents(atPath: directory + "/" + file))
            #expect(throws: Never.self, "\(target)/\(file)") { try data.withUnsafeBytes { try check($0) } }
        }
    }
}
