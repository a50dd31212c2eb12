import Foundation
import MacroTestSupport
import Testing

/// README's in-process tour is what a user sees: its block of `$ $B/macro ...` commands runs,
/// each in turn, on a copy of the repository's `macros/` with no daemon, and each command's
/// output matches the lines README shows under it. `...` in README stands for any rows; numbers
/// (random values, file counts) may differ.
@Suite("README's tour")
struct ReadmeTourTests {
    /// One command of the block and the lines README shows under it.
    struct Step {
        var arguments: [String]
        var expected: [String]
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The fenced block that starts with `$ B=.build/release`, as steps.
    static func tour() throws -> [Step] {
        let readme = try String(contentsOfFile: repository + "/README.md", encoding: .utf8)
        let blocks = readme.components(separatedBy: "```sh\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
        let block = try #require(blocks.first { $0.hasPrefix("$ B=.build/release") }, "README has no block starting with `$ B=.build/release`")
        var steps: [Step] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
            if line.hasPrefix("$ $B/macro ") {
                let command = line.dropFirst("$ $B/macro ".count).components(separatedBy: " #")[0]
                steps.append(Step(arguments: command.split(separator: " ").map(String.init), expected: []))
            } else {
                try #require(!steps.isEmpty, "README's tour has output before its first command: \(line)")
                steps[steps.count - 1].expected.append(String(line))
            }
        }
        return steps
    }

    /// `line` with every number as `#`.
    static func shape(_ line: String) -> String {
        line.replacingOccurrences(of: #"-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"#, with: "#", options: .regularExpression)
    }

    /// Whether `actual` matches `expected`, where a `...` line stands for any number of lines.
    static func matches(_ actual: ArraySlice<String>, _ expected: ArraySlice<String>) -> Bool {
        guard let first = expected.first else { return actual.isEmpty }
        if first == "..." {
            return (actual.startIndex...actual.endIndex).contains { matches(actual[$0...], expected.dropFirst()) }
        }
        guard let line = actual.first, shape(line) == shape(first) else { return false }
        return matches(actual.dropFirst(), expected.dropFirst())
    }

    @Test func theInProcessTourPrintsWhatReadmeShows() throws {
        let steps = try Self.tour()
        #expect(steps.map { $0.arguments.first } == ["list", "run", "run", "run", "check"])
        let directory = TemporaryDirectory(prefix: "tour")
        try FileManager.default.copyItem(atPath: Self.repository + "/macros", toPath: directory.url("macros"))
        // No daemon answers, and the state file and config are the temporary home's.
        let environment = [
            "MACROENGINE_SOCKET": directory.url("none.sock"), "HOME": directory.path, "XDG_STATE_HOME": directory.url("state"),
            "XDG_CONFIG_HOME": directory.url("config"), "XDG_RUNTIME_DIR": directory.path,
        ]
        for step in steps {
            let result = try BinaryRunner.run("macro", step.arguments, environment: environment, currentDirectory: directory.path)
            #expect(result.status == 0, "macro \(step.arguments.joined(separator: " ")): \(result)")
            // What the terminal shows: the output, then the summary `check` writes to standard error.
            let actual = (result.stdout + result.stderr).split(separator: "\n").map(String.init)
            #expect(
                Self.matches(actual[...], step.expected[...]),
                "macro \(step.arguments.joined(separator: " ")) printed:\n\(actual.joined(separator: "\n"))\nREADME shows:\n\(step.expected.joined(separator: "\n"))")
        }
    }

    @Test func theMatcherTellsRowsLeftOutFromRowsThatDiffer() {
        #expect(Self.matches(["a", "b 1.5", "c"], ["a", "...", "c"]))
        #expect(Self.matches(["a", "c"], ["a", "...", "c"]))
        #expect(Self.matches(["inner   0.56"], ["inner   9.99"]))
        #expect(!Self.matches(["inner   0.56"], ["outer   0.56"]))
        #expect(!Self.matches(["a", "b"], ["a"]))
        #expect(!Self.matches(["a"], ["a", "b"]))
    }
}
