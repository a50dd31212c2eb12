import MacroEngineCore
import Testing

/// `macro.list`'s entries: the same shape from macrod and from `macro list --local`.
@Suite struct MacroEntryJSONTests {
    @Test func aLiveMacroHasNoErrorMember() {
        let entry = MacroEntry(name: "bump", file: "/m/bump.js", status: .ok, version: 3)
        #expect(entry.listJSON(kind: "macro").jsonText() == #"{"name":"bump","kind":"macro","status":"ok","file":"/m/bump.js","version":3}"#)
    }

    @Test func anErrorWithAPositionGivesLineAndColumn() {
        let error = MacroError(code: .syntax, message: "SyntaxError: Unexpected token ';'", file: "/m/lib/x.js", line: 2, column: 15)
        let entry = MacroEntry(name: "lib/x", file: "/m/lib/x.js", status: .error, error: error, version: 0)
        let json = entry.listJSON(kind: "lib")
        #expect(json["kind"] == "lib")
        #expect(json["error"]["line"] == 2)
        #expect(json["error"]["column"] == 15)
    }

    @Test func anErrorWithoutAPositionGivesNullLineAndColumn() {
        let error = MacroError(code: .invalidName, message: "'1x' is not a valid macro name", file: "/m/1x.js")
        let entry = MacroEntry(name: "1x", file: "/m/1x.js", status: .error, error: error, version: 0)
        #expect(entry.listJSON(kind: "macro")["error"].jsonText() == #"{"message":"\#(error.headline)","line":null,"column":null}"#)
    }
}
