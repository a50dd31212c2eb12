import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `macro run` on a daemon skips swift-argument-parser for the usual command line (Run.Direct,
/// docs/performance.md). It must answer exactly as the parsed command does: each line here runs
/// twice, as given (the direct path where it applies) and with `--verbose` added, an option the
/// direct path leaves to the parser and that changes nothing on a daemon; output and exit code
/// must be the same, byte for byte.
@Suite("macro run, direct and parsed")
struct RunDirectTests {
    static let files = [
        "echo.js": "function echo(...args) {\n  console.log('got', args.length);\n  console.error('to stderr');\n  return args;\n}\n",
        "fail.js": "function fail(why) {\n  throw new TypeError('no: ' + why);\n}\n",
    ]

    @Test func theDirectPathAnswersAsTheParserDoes() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let socket = daemon.socket
        let lines: [[String]] = [
            ["echo", "--socket", socket],
            ["echo", "1", "-2.5", "true", "\"text\"", "[1,2]", "{\"a\":1}", "word", "--socket", socket],
            ["echo", "--socket=\(socket)", "--", "--json", "-x", "--socket"],
            ["--json", "echo", "7", "--socket", socket],
            ["echo", "7", "--timeout-ms", "5000", "--socket", socket],
            ["echo", "7", "--timeout-ms=5000", "--json", "--socket", socket],
            ["fail", "reason", "--socket", socket],
            ["fail", "reason", "--json", "--socket", socket],
            ["missing", "--socket", socket],
            ["missing", "--json", "--socket", socket],
            ["help", "--socket", socket],
            ["echo", "", "-", "--socket", socket],
        ]
        for line in lines {
            let direct = try BinaryRunner.run("macro", ["run"] + line)
            let parsed = try BinaryRunner.run("macro", ["run", "--verbose"] + line)
            #expect(direct.status == parsed.status, "\(line)\ndirect: \(direct)\nparsed: \(parsed)")
            #expect(direct.stdout == parsed.stdout, "\(line)\ndirect: \(direct)\nparsed: \(parsed)")
            #expect(direct.stderr == parsed.stderr, "\(line)\ndirect: \(direct)\nparsed: \(parsed)")
        }
        // The progress lines are those of the parsed command too (the rings are untouched here).
        let shown = try BinaryRunner.run("macro", ["run", "echo", "--socket", socket])
        #expect(shown.stdout == "result: []\ninner   0.00\nmiddle  0.00\nouter   0.00\n", "\(shown)")
        #expect(shown.stderr == "[echo] got 0\n[echo] error: to stderr\n", "\(shown)")
    }

    /// A line with anything the direct path does not take goes to the parser, which answers as
    /// it always did: an unknown option, a missing name, an invalid --timeout-ms, help.
    @Test func otherLinesAreParsedAsBefore() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let bogus = try BinaryRunner.run("macro", ["run", "echo", "--bogus", "--socket", daemon.socket])
        #expect(bogus.status == 64, "\(bogus)")
        let noName = try BinaryRunner.run("macro", ["run", "--socket", daemon.socket])
        #expect(noName.status == 64, "\(noName)")
        let badTimeout = try BinaryRunner.run("macro", ["run", "echo", "--timeout-ms", "0", "--socket", daemon.socket])
        #expect(badTimeout.status == 64, "\(badTimeout)")
        #expect(badTimeout.stderr.contains("--timeout-ms must be a whole number"), "\(badTimeout)")
        let help = try BinaryRunner.run("macro", ["run", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: Run a macro"), "\(help)")
    }
}
