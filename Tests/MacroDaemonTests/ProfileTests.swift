import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `macro profile` and `macro.profile`: JavaScriptCore's sampling profiler, folded stacks.
@Suite("Profiler")
struct ProfileTests {
    static let files = [
        "heavy.js": """
        function() {
            function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * Math.sin(i); return s; }
            function cold(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }
            return hot(2e6) + cold(1e5);
        }
        """,
    ]

    /// Inclusive samples per frame below the root (the macro itself), from folded text.
    static func widths(_ folded: String) -> [String: Int] {
        var widths: [String: Int] = [:]
        for line in folded.split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let count = Int(line[line.index(after: space)...]) else { continue }
            let frames = Set(line[..<space].split(separator: ";").dropFirst().map(String.init))
            for frame in frames { widths[frame, default: 0] += count }
        }
        return widths
    }

    @Test func theHotFunctionIsTheWidestFrame() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let output = daemon.dir.url("heavy.folded")
        let result = try BinaryRunner.macro("profile", "heavy", "--runs", "3", "--format", "folded", "--output", output, "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        let folded = try String(contentsOfFile: output, encoding: .utf8)
        let lines = folded.split(separator: "\n")
        #expect(!lines.isEmpty)
        // Every stack starts at the macro, named with its file and line.
        #expect(lines.allSatisfy { $0.hasPrefix("heavy (\(daemon.macros)/heavy.js:") })
        #expect(!folded.contains("__macroengine") && !folded.contains("(program)"))
        let widths = Self.widths(folded)
        let widest = try #require(widths.max { $0.value < $1.value })
        #expect(widest.key == "hot (line 2)", "\(widths)")
        let total = lines.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        #expect(widest.value * 2 > total, "\(folded)")
        #expect(result.stderr.hasSuffix(" samples of 3 run(s) written to \(output)\n"))
    }

    @Test func theMethodAndItsErrors() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let profile = try client.call("macro.profile", ["name": "heavy", "runs": 1])
        #expect(profile["name"] == "heavy" && profile["runs"] == 1)
        #expect((profile["samples"].intValue ?? 0) > 0)
        #expect(profile["folded"].stringValue?.contains("hot (line 2)") == true)
        let ghost = try #require(throws: RPCError.self) { try client.call("macro.profile", ["name": "ghost"]) }
        #expect(ghost.code == RPCError.noSuchMacro)
        let runs = try #require(throws: RPCError.self) { try client.call("macro.profile", ["name": "heavy", "runs": 0]) }
        #expect(runs.message == "Invalid params: runs must be a whole number from 1 to 100000")
        let pdf = try BinaryRunner.macro("profile", "heavy", "--format", "pdf", "--socket", daemon.socket)
        #expect(pdf.status == 64)
        #expect(pdf.stderr.hasPrefix("Error: --format must be svg, folded or cpuprofile, got 'pdf'\n"))
    }

    @Test func anSVGFlameGraphAndACPUProfile() throws {
        let daemon = try DaemonProcess(files: Self.files)
        // The default: NAME.profile.svg in the current directory.
        let svg = try BinaryRunner.macro(arguments: ["profile", "heavy", "--runs", "2", "--socket", daemon.socket], currentDirectory: daemon.dir.path)
        #expect(svg.status == 0, "\(svg)")
        let path = daemon.dir.url("heavy.profile.svg")
        let xml = try BinaryRunner.run("/usr/bin/env", ["python3", "-c", "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])", path])
        #expect(xml.status == 0, "not well-formed XML: \(xml)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("function search()"))
        // Each frame's tooltip: `NAME (N samples, P%)`; below the root and the macro, hot is the widest.
        var widths: [String: Int] = [:]
        for part in text.components(separatedBy: "<title>").dropFirst() {
            let title = part.components(separatedBy: "</title>")[0]
            guard let open = title.range(of: " (", options: .backwards), let count = Int(title[open.upperBound...].split(separator: " ")[0]) else { continue }
            widths[String(title[..<open.lowerBound]), default: 0] += count
        }
        let frames = widths.filter { $0.key != "all" && !$0.key.hasPrefix("heavy (") }
        #expect(frames.max { $0.value < $1.value }?.key == "hot (line 2)", "\(widths)")

        let cpu = try BinaryRunner.macro("profile", "heavy", "--runs", "1", "--format", "cpuprofile", "--output", "-", "--socket", daemon.socket)
        #expect(cpu.status == 0, "\(cpu)")
        let profile = try MacroValue(jsonText: cpu.stdout)
        let nodes = profile["nodes"].arrayValue ?? []
        let hits = nodes.compactMap { $0["hitCount"].intValue }.reduce(0, +)
        #expect(hits > 0 && hits == profile["samples"].arrayValue?.count && hits == profile["timeDeltas"].arrayValue?.count)
        #expect(nodes.first?["callFrame"]["functionName"] == "(root)")
        #expect(nodes.contains { $0["callFrame"]["functionName"] == "hot" && $0["callFrame"]["lineNumber"] == 1 })
        #expect(nodes.contains { $0["callFrame"]["functionName"] == "heavy" && $0["callFrame"]["url"] == .string(daemon.macros + "/heavy.js") })
    }
}
