import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// TypeScript's own checker (`tsc`, Debian's node-typescript, installed by `make test`) on the
/// shipped macros with the shipped `macros/jsconfig.json` and `macros/globals.d.ts`.
@Suite("Editors: tsc accepts the shipped macros")
struct EditorTypesTests {
    /// The `tsc` binary; the test fails (not skips) without it.
    static func tsc() throws -> String {
        let candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map { "\($0)/tsc" }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ToolMissing(description: "tsc not found in PATH: `make test` installs Debian's node-typescript")
        }
        return found
    }

    struct ToolMissing: Error, CustomStringConvertible { var description: String }

    /// Copies the shipped macros directory (JavaScript, jsconfig, d.ts) into `dir/macros`.
    static func copyShippedMacros(to dir: TemporaryDirectory) throws -> String {
        let target = dir.url("macros")
        try FileManager.default.copyItem(atPath: repositoryRoot + "/macros", toPath: target)
        return target
    }

    @Test func tscPassesOnTheShippedMacrosWithZeroErrors() throws {
        let result = try BinaryRunner.run(try Self.tsc(), ["-p", repositoryRoot + "/macros/jsconfig.json"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "")
    }

    @Test func tscFlagsWrongCallsAndTypes() throws {
        let dir = TemporaryDirectory()
        let macros = try Self.copyShippedMacros(to: dir)
        try dir.write(
            "macros/wrong.js",
            """
            // Deliberately wrong.
            function wrong() {
                setInnerProgress("x");
                progress.inner.toUpperCase();
                bump("inner", 1, 2, 3);
                console.log(document);
                store.set(1, 2);
            }

            """)
        let result = try BinaryRunner.run(try Self.tsc(), ["-p", "jsconfig.json", "--pretty", "false"], currentDirectory: macros)
        #expect(result.status == 2, "\(result)")
        #expect(
            result.stdout.split(separator: "\n").map(String.init) == [
                "wrong.js(3,22): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
                "wrong.js(4,20): error TS2339: Property 'toUpperCase' does not exist on type 'number'.",
                "wrong.js(5,22): error TS2554: Expected 0-2 arguments, but got 4.",
                "wrong.js(6,17): error TS2584: Cannot find name 'document'. Do you need to change your target library? Try changing the 'lib' compiler option to include 'dom'.",
                "wrong.js(7,15): error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'.",
            ])
    }

    @Test func theTemplateOfMacroEditAndTheLegacyFormBothLoadAndTheTemplateChecks() throws {
        let dir = TemporaryDirectory()
        let macros = try Self.copyShippedMacros(to: dir)
        // `macro edit NEW` with an editor that saves the template unchanged plus one line.
        let editor = try dir.write("editor.sh", "#!/bin/sh\nsed -i 's|^    $|    return getInnerProgress();|' \"$1\"\n")
        chmod(editor, 0o755)
        let edit = try BinaryRunner.macro("edit", "fresh", "--macros", macros, environment: ["EDITOR": editor])
        #expect(edit.status == 0, "\(edit)")
        #expect(try dir.read("macros/fresh.js") == "// fresh: describe what it does.\nfunction fresh() {\n    return getInnerProgress();\n}\n")
        let run = try BinaryRunner.macro("run", "fresh", "--macros", macros, "--state", dir.url("state.json"), "--json")
        #expect(run.status == 0, "\(run)")
        #expect(try MacroValue(jsonText: run.stdout)["result"] == 0)
        let tsc = try BinaryRunner.run(try Self.tsc(), ["-p", macros + "/jsconfig.json"])
        #expect(tsc.status == 0, "\(tsc)")
    }
}
