import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `log_format: json`: macrod's stderr is one JSON object per line.
@Suite("JSON log format")
struct LogFormatTests {
    @Test func everyLineIsOneJSONObjectWithMacroAndCall() throws {
        let daemon = try DaemonProcess(
            files: [
                "chatty.js": "function() { console.log('hello\\nworld'); return 1 }",
                "boom.js": "function() {\n  throw new TypeError('bad');\n}",
            ],
            config: "log_format: json\n")
        let client = try daemon.client()
        client.setReceiveTimeout(seconds: 10)
        let logWrites = try DirectoryEvents(daemon.dir.path)
        try client.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"chatty"}}"#)
        let console = try #require(try client.readMessage())
        let call = try #require(console["params"]["call"].intValue)
        #expect(try #require(try client.readMessage())["result"] == 1)
        _ = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "boom"]) }
        // The error is logged once the call failed: its line in the file is waited for (each
        // write to the log is looked at).
        let lines =
            logWrites.until {
                let lines = daemon.log.split(separator: "\n").map(String.init)
                return lines.contains(where: { $0.contains("TypeError") }) ? lines : nil
            } ?? daemon.log.split(separator: "\n").map(String.init)
        let records = try lines.map { line in try #require(try MacroValue(jsonText: line).objectValue, "not a JSON object: \(line)") }
        #expect(records.count >= 4)
        for record in records {
            #expect(Array(record.keys.prefix(5)) == ["timestamp", "level", "message", "macro", "call"], "\(record)")
            #expect(record["timestamp"]?.stringValue?.count == 24)
        }
        let hello = try #require(records.first { $0["message"] == "hello\nworld" })
        #expect(hello["level"] == "info")
        #expect(hello["macro"] == "chatty")
        #expect(hello["call"] == .number(Double(call)))
        let boom = try #require(records.first { $0["message"]?.stringValue?.contains("TypeError") == true })
        #expect(boom["level"] == "error")
        #expect(boom["macro"] == "boom")
        #expect(boom["metadata"]?["line"] == "2")
        #expect(boom["metadata"]?["stack"].stringValue?.contains("boom.js:2:") == true)
        let listening = try #require(records.first { $0["message"]?.stringValue?.hasPrefix("macrod ") == true })
        #expect(listening["macro"] == .null && listening["call"] == .null)
    }
}
