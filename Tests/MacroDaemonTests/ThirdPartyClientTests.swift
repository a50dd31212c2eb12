import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// A real third-party JSON-RPC client against macrod: tinyrpc (PyPI), which rejects any reply
/// whose id it did not send. `make test` installs it into `.build/python` (target `test-deps`).
@Suite("macrod with a third-party JSON-RPC client")
struct ThirdPartyClientTests {
    static let pythonPath = repositoryRoot + "/.build/python"

    @Test func tinyrpcMatchesEveryReplyIncludingBigAndTimeIDs() throws {
        let check = try BinaryRunner.run("/usr/bin/env", ["python3", "-c", "import tinyrpc"], environment: ["PYTHONPATH": Self.pythonPath])
        try #require(check.status == 0, "tinyrpc is missing: run `make test-deps` (python3 -m pip install --target .build/python tinyrpc==1.1.7)\n\(check)")
        let daemon = try DaemonProcess(files: ["bump.js": "function(channel, amount) { console.log('bump'); progress[channel] += amount; return progress[channel] }"])
        let result = try BinaryRunner.run(
            "/usr/bin/env", ["python3", repositoryRoot + "/Tests/clients/tinyrpc_client.py", daemon.socket],
            environment: ["PYTHONPATH": Self.pythonPath])
        #expect(result.status == 0, "\(result)")
        // Replies come in completion order (the unknown method is answered at once): compare sorted.
        #expect(
            result.stdout.split(separator: "\n").sorted() == [
                "'s-1' result 5",
                "1152921504606846976 result 2",
                "1152921504606846977 result 1",
                "7 error -32601 Method not found: no.such",
                "8 error -32602 Invalid params: unknown param 'argz' (macro.call takes name, args, timeoutMs, announce, console)",
                "9007199254740993 result 4",
                "time_ns result 3",
            ])
    }
}
