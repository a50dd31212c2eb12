import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `macro profile` (daemon and `--local`) and `macro.profile`: JavaScriptCore's sampling
/// profiler, frames named `function (file:line)`, the engine's helpers folded away.
@Suite("Profiler")
struct ProfileTests {
    static let files = [
        // hot() is defined on line 2 of the lib file, heavy() on line 2 of its macro file.
        "lib/work.js": """
        // work.js: helpers every macro can use
        function hot(n) {
            var s = 0;
            for (var i = 0; i < n; i++) {
                s += Math.sqrt(i) * Math.sin(i);
            }
            return s;
        }
        function cold(n) { var s = 0; for (var i = 0; i < n; i++) s += i; return s; }
        """,
        "heavy.js": """
        // heavy(): most of its time in hot(), from lib/work.js
        function heavy() {
            return hot(2e6) + cold(1e5);
        }
        """,
        // Built-ins (each a frozen accessor of the hardened built-ins) and a bridge function.
        "builtins.js": """
        function builtins() {
            var xs = [1, 2, 3, 4], t = 0;
            for (var k = 0; k < 20000; k++) {
                t += xs.map(function (x) { return x * 2; }).length;
                xs.forEach(function (x) { t += x; });
                t += [...xs].length + Math.max(...xs) + JSON.stringify(xs).length;
                setInnerProgress(k % 10);
            }
            return t;
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

    /// The samples of folded text.
    static func total(_ folded: String) -> Int {
        folded.split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
    }

    /// The profile of `heavy` has hot(), of the lib file, as its widest frame, with more than
    /// half the samples; every stack starts at the macro.
    static func expectHotIsWidest(_ folded: String) throws {
        let lines = folded.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0.hasPrefix("heavy (heavy.js:2)") }, "\(folded)")
        let widest = try #require(widths(folded).max { $0.value < $1.value })
        #expect(widest.key == "hot (lib/work.js:2)", "\(folded)")
        #expect(widest.value * 2 > total(folded), "\(folded)")
    }

    @Test func aRunTooShortForTheSamplerSaysHowManyRunsWouldDo() throws {
        let dir = TemporaryDirectory(prefix: "profile")
        try dir.write("macros/quick.js", "function quick() { return 1; }")
        let output = dir.url("quick.folded")
        let result = try BinaryRunner.macro("profile", "quick", "--runs", "1", "--local", "--macros", dir.url("macros"), "--format", "folded", "--output", output)
        // One run of a one-line macro takes microseconds: almost always no sample, exit 65 and
        // the advice. On a loaded machine the run may still meet a sampler tick (a collection,
        // a page fault): then it is an ordinary profile of its samples.
        if result.status == 65 {
            #expect(result.stderr.hasSuffix(ProfileLimits.noSamplesMessage(runs: 1, name: "quick") + "\n"), "\(result)")
        } else {
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr.contains(" samples of 1 run(s) written to \(output)"), "\(result)")
            #expect(!result.stderr.contains("0 samples of"), "\(result)")
        }
    }

    /// The advice itself, exactly (the branch above that a loaded machine may not reach).
    @Test func theNoSamplesAdviceSuggestsAHundredTimesTheRuns() {
        #expect(
            ProfileLimits.noSamplesMessage(runs: 1, name: "quick")
                == "no samples: 1 run(s) of quick took less than the sampler's millisecond in all; try --runs 1000 (at most 100000)")
        #expect(ProfileLimits.noSamplesMessage(runs: 50, name: "q").hasSuffix("try --runs 5000 (at most 100000)"))
        #expect(ProfileLimits.noSamplesMessage(runs: 5000, name: "q").hasSuffix("try --runs 100000 (at most 100000)"))
    }

    @Test func theHotFunctionOfALibFileIsTheWidestFrame() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let output = daemon.dir.url("heavy.folded")
        let result = try BinaryRunner.macro("profile", "heavy", "--runs", "3", "--format", "folded", "--output", output, "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        let folded = try String(contentsOfFile: output, encoding: .utf8)
        try Self.expectHotIsWidest(folded)
        #expect(result.stderr == "\(Self.total(folded)) samples of 3 run(s) written to \(output)\n")
    }

    /// Built-ins go through the hardened built-ins' accessors (`get`, the `__macroengine_frozen`
    /// setter, from a script the engine evaluates), calls through `__macroengine_invoke`: none
    /// of them, nor `(program)`, is a frame. Frames of files name their file; the rest are
    /// JavaScriptCore's built-ins and native functions by name, the bridge's among them.
    @Test func theEnginesHelpersAreFoldedAway() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let result = try BinaryRunner.macro("profile", "builtins", "--runs", "3", "--format", "folded", "--output", "-", "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        let frames = Set(
            result.stdout.split(separator: "\n").flatMap { line in
                line[..<line.lastIndex(of: " ")!].split(separator: ";").map(String.init)
            })
        #expect(result.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("builtins (builtins.js:1)") }, "\(result.stdout)")
        for frame in frames {
            // An optimized frame of an anonymous callback may carry no line, and no other sample
            // of it gave one (few samples on a loaded machine): then it is named by its file only.
            let named =
                frame.wholeMatch(of: /.+ \((builtins\.js|lib\/work\.js):\d+\)/) != nil
                || frame.wholeMatch(of: /\(anonymous\) \((builtins\.js|lib\/work\.js)\)/) != nil
            #expect(named || !frame.contains(" ("), "a frame of no known file: \(frame)")
            #expect(!["get", "set", "value", "format", "inspect", "(program)", "(anonymous)"].contains(frame), "an engine helper: \(frame)")
            #expect(!frame.contains("__macroengine"), "\(frame)")
        }
        #expect(frames.contains("setInnerProgress"), "\(frames.sorted())")
    }

    @Test func locallyTheSameWidestFrameAndNothingSaved() throws {
        let dir = TemporaryDirectory(prefix: "profile-local")
        for (name, source) in Self.files { try dir.write("macros/\(name)", source) }
        let state = dir.url("state.json")
        let heavy = try BinaryRunner.macro("profile", "heavy", "--local", "--macros", dir.url("macros"), "--state", state, "--runs", "3", "--format", "folded", "--output", "-")
        #expect(heavy.status == 0, "\(heavy)")
        try Self.expectHotIsWidest(heavy.stdout)
        // builtins() sets the inner ring: a profile measures, it keeps nothing.
        let builtins = try BinaryRunner.macro("profile", "builtins", "--local", "--macros", dir.url("macros"), "--state", state, "--runs", "1", "--output", dir.url("b.svg"))
        #expect(builtins.status == 0, "\(builtins)")
        #expect(!FileManager.default.fileExists(atPath: state))
        // Without --local and without a daemon, the same in-process profile.
        let fallback = try BinaryRunner.macro(arguments: ["profile", "heavy", "--runs", "1", "--json"], currentDirectory: dir.path)
        #expect(fallback.status == 0, "\(fallback)")
        let answer = try MacroValue(jsonText: fallback.stdout)
        #expect(answer["name"] == "heavy" && answer["runs"] == 1 && answer["macrosDir"] == "macros")
        #expect(answer["samples"].intValue == Self.total(answer["folded"].stringValue ?? "") && (answer["samples"].intValue ?? 0) > 0)
    }

    @Test func theMethodAndItsErrors() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let profile = try client.call("macro.profile", ["name": "heavy", "runs": 1])
        #expect(profile["name"] == "heavy" && profile["runs"] == 1 && profile["macrosDir"] == .string(daemon.macros))
        #expect(profile["samples"].intValue == Self.total(profile["folded"].stringValue ?? "") && (profile["samples"].intValue ?? 0) > 0)
        #expect(profile["folded"].stringValue?.contains("heavy (heavy.js:2);hot (lib/work.js:2) ") == true)
        let ghost = try #require(throws: RPCError.self) { try client.call("macro.profile", ["name": "ghost"]) }
        #expect(ghost.code == RPCError.noSuchMacro && ghost.message == "no macro named 'ghost'")
        for runs: MacroValue in [0, 1.5, 100_001, "3"] {
            let error = try #require(throws: RPCError.self) { try client.call("macro.profile", ["name": "heavy", "runs": runs]) }
            #expect(error.code == RPCError.invalidParams && error.message == "Invalid params: runs must be a whole number from 1 to 100000")
        }
        // The same through the command, daemon and local.
        let missing = try BinaryRunner.macro("profile", "ghost", "--socket", daemon.socket)
        #expect(missing.status == 66 && missing.stderr == "macro: no macro named 'ghost'\n", "\(missing)")
        let local = try BinaryRunner.macro("profile", "ghost", "--local", "--macros", daemon.macros, "--state", daemon.dir.url("local.json"))
        #expect(local.status == 66, "\(local)")
        #expect(local.stderr == "ghost: error: no macro named 'ghost' in \(daemon.macros) (available: builtins, heavy)\n", "\(local)")
        for local in [[], ["--local"]] {
            let zero = try BinaryRunner.macro(arguments: ["profile", "heavy", "--runs", "0", "--socket", daemon.socket] + local)
            #expect(zero.status == 64 && zero.stderr.hasPrefix("Error: --runs must be between 1 and 100000, got 0\n"), "\(zero)")
            let pdf = try BinaryRunner.macro(arguments: ["profile", "heavy", "--format", "pdf", "--socket", daemon.socket] + local)
            #expect(pdf.status == 64 && pdf.stderr.hasPrefix("Error: --format must be svg, folded or cpuprofile, got 'pdf'\n"), "\(pdf)")
        }
        let unwritable = try BinaryRunner.macro("profile", "heavy", "--runs", "1", "--output", daemon.dir.url("absent/heavy.svg"), "--socket", daemon.socket)
        #expect(unwritable.status == 74, "\(unwritable)")
        #expect(unwritable.stderr == "macro: cannot write \(daemon.dir.url("absent/heavy.svg")): No such file or directory\n")
    }

    /// The SVG: well-formed, one `<title>` tooltip per frame (`NAME (N samples, P%)`), the root's
    /// count the samples reported. The `.cpuprofile`: what DevTools reads.
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
        let samples = try #require(Int(svg.stderr.prefix { $0 != " " }))
        #expect(svg.stderr == "\(samples) samples of 2 run(s) written to heavy.profile.svg\n")
        let groups = text.components(separatedBy: "<g class=\"f\">").dropFirst()
        #expect(groups.count > 2)
        var widths: [String: Int] = [:]
        for group in groups {
            // Each frame: one title, then its rectangle.
            let titles = group.components(separatedBy: "<title>").dropFirst()
            try #require(titles.count == 1 && group.contains("</title><rect "), "\(group)")
            let title = titles.first!.components(separatedBy: "</title>")[0]
            let match = try #require(title.wholeMatch(of: /(.+) \((\d+) samples, \d+\.\d\d%\)/), "\(title)")
            widths[String(match.1), default: 0] += Int(match.2)!
        }
        #expect(widths["all"] == samples)
        let frames = widths.filter { $0.key != "all" && $0.key != "heavy (heavy.js:2)" }
        #expect(frames.max { $0.value < $1.value }?.key == "hot (lib/work.js:2)", "\(widths)")

        let output = daemon.dir.url("heavy.cpuprofile")
        let cpu = try BinaryRunner.macro("profile", "heavy", "--runs", "1", "--format", "cpuprofile", "--output", output, "--socket", daemon.socket)
        #expect(cpu.status == 0, "\(cpu)")
        let python = try BinaryRunner.run("/usr/bin/env", ["python3", "-c", "import json, sys; json.load(open(sys.argv[1]))", output])
        #expect(python.status == 0, "not JSON: \(python)")
        let profile = try MacroValue(jsonText: try String(contentsOfFile: output, encoding: .utf8))
        #expect(Set(profile.objectValue?.keys.map { $0 } ?? []) == ["nodes", "startTime", "endTime", "samples", "timeDeltas"])
        let nodes = try #require(profile["nodes"].arrayValue)
        let ids = nodes.compactMap { $0["id"].intValue }
        #expect(ids.count == nodes.count && Set(ids).count == ids.count)
        #expect(nodes.first?["callFrame"]["functionName"] == "(root)")
        for node in nodes {
            let frame = node["callFrame"]
            #expect(frame["functionName"].stringValue != nil && frame["scriptId"].stringValue != nil && frame["url"].stringValue != nil)
            #expect(frame["lineNumber"].intValue != nil && frame["columnNumber"].intValue != nil && node["hitCount"].intValue != nil)
            #expect((node["children"].arrayValue ?? []).allSatisfy { ids.contains($0.intValue ?? 0) })
        }
        let sampled = try #require(profile["samples"].arrayValue)
        let deltas = try #require(profile["timeDeltas"].arrayValue)
        #expect(sampled.allSatisfy { ids.contains($0.intValue ?? 0) })
        #expect(nodes.compactMap { $0["hitCount"].intValue }.reduce(0, +) == sampled.count && sampled.count == deltas.count)
        #expect(cpu.stderr == "\(sampled.count) samples of 1 run(s) written to \(output)\n")
        let elapsed = (profile["endTime"].intValue ?? 0) - (profile["startTime"].intValue ?? 0)
        #expect(elapsed == deltas.compactMap(\.intValue).reduce(0, +))
        // Zero-based lines, the files' full paths.
        #expect(
            nodes.contains { $0["callFrame"]["functionName"] == "hot" && $0["callFrame"]["lineNumber"] == 1 && $0["callFrame"]["url"] == .string(daemon.macros + "/lib/work.js") })
        #expect(
            nodes.contains { $0["callFrame"]["functionName"] == "heavy" && $0["callFrame"]["lineNumber"] == 1 && $0["callFrame"]["url"] == .string(daemon.macros + "/heavy.js") })
    }
}
