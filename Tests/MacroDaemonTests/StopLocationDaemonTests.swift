import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// Driven as a user does: a call cancelled with `macro cancel`, or stopped by
/// the daemon's `time_limit_ms`, answers with the loop that was running (line and column), and
/// each caller's call site in the stack.
@Suite("Where a stopped call was, through macrod")
struct StopLocationDaemonTests {
    static let files = [
        "lib/forever.js": "// a helper every macro sees\nfunction forever() {\n  let i = 0;\n  do { i++ } while (true)\n}\n",
        "nested.js": "function () {\n  function helper(step) {\n    let x = 0;\n      while (true) { x += step }\n  }\n  var a = 1;\n  helper(a);\n}\n",
        "viaLib.js": "function () {\n  let before = 1;\n  return before + forever();\n}\n",
        "later.js": "async function () {\n  await null;\n  let i = 0;\n  for (;;) { i += 2 }\n}\n",
    ]

    /// What each macro's error must say: line, column, stack (`%` is the macros directory).
    static let expected: [String: (line: Int, column: Int, stack: String)] = [
        "nested": (4, 7, "helper@%/nested.js:4:7\nnested@%/nested.js:7:3"),
        "viaLib": (4, 3, "forever@%/lib/forever.js:4:3\nviaLib@%/viaLib.js:3:19"),
        "later": (4, 3, "later@%/later.js:4:3"),
    ]

    @Test(arguments: ["nested", "viaLib", "later"])
    func aCallCancelledWithMacroCancelPointsAtItsLoop(_ name: String) throws {
        let daemon = try DaemonProcess(files: Self.files, config: "time_limit_ms: 60000\ncall_deadline_ms: 60000\n")
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"\#(name)"}}"#)
        let control = try daemon.client()
        var running: [MacroValue] = []
        let deadline = Date().addingTimeInterval(5)
        while running.isEmpty, Date() < deadline {
            running = try control.call("macro.running").arrayValue ?? []
        }
        let id = try #require(running.first?["call"].intValue)
        let cancel = try BinaryRunner.macro("cancel", String(id), "--socket", daemon.socket)
        #expect(cancel.status == 0, "\(cancel)")
        let reply = try #require(try caller.readMessage())
        #expect(reply["error"]["data"]["reason"] == "cancelled")
        try check(reply["error"]["data"], name, daemon)
    }

    @Test(arguments: ["nested", "viaLib", "later"])
    func aCallStoppedByTheTimeLimitPointsAtItsLoop(_ name: String) throws {
        let daemon = try DaemonProcess(files: Self.files, config: "time_limit_ms: 150\n")
        let client = try daemon.client()
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": .string(name)]) }
        #expect(error.code == -32001)
        #expect(error.data?["reason"] == "timeout")
        try check(error.data ?? .undefined, name, daemon)
    }

    private func check(_ data: MacroValue, _ name: String, _ daemon: DaemonProcess) throws {
        let want = try #require(Self.expected[name])
        let stack = want.stack.replacingOccurrences(of: "%", with: daemon.macros)
        #expect(data["file"] == .string(String(stack.split(separator: "@")[1].split(separator: ":")[0])))
        #expect(data["line"] == .number(Double(want.line)))
        #expect(data["column"] == .number(Double(want.column)))
        #expect(data["stack"] == .string(stack))
    }
}
