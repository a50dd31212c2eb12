import Foundation
import MacroFuzz
import MacroTestSupport
import Testing

/// The checked-in fuzz corpus (seeds, and every crash a fuzzer found, kept as a regression
/// input) replayed through the fuzz targets on each test run. A failing invariant stops the run
/// with the target's message, as it would stop the fuzzer.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    @Test(arguments: ["rpc-line", "macro-file"])
    func theCorpusReplaysCleanly(_ target: String) throws {
        let run = try #require(FuzzTargets.all[target])
        let directory = repositoryRoot + "/Fuzz/corpus/" + target
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files.count >= 9)
        for file in files {
            let data = try #require(FileManager.default.contents(atPath: directory + "/" + file))
            data.withUnsafeBytes { run($0) }
        }
    }
}
