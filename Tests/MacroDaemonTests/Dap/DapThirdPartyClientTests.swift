import Foundation
import MacroTestSupport
import Testing

/// A real third-party DAP client drives `macro dap`: dap-python (PyPI), whose models validate
/// every response and event. `make test` installs it into `.build/python` (target `test-deps`).
@Suite("macro dap: a real DAP client (dap-python)")
struct DapThirdPartyClientTests {
    static let pythonPath = repositoryRoot + "/.build/python"

    @Test func dapPythonLaunchesStopsStepsReadsVariablesAndExits() throws {
        let check = try BinaryRunner.run("/usr/bin/env", ["python3", "-c", "import dap"], environment: ["PYTHONPATH": Self.pythonPath])
        try #require(check.status == 0, "dap-python is missing: run `make test-deps` (python3 -m pip install --target .build/python dap-python==0.5.0)\n\(check)")
        let daemon = try DaemonProcess(files: ["lib/helpers.js": DapTests.files["lib/helpers.js"]!, "main.js": DapTests.files["main.js"]!])
        let result = try BinaryRunner.run(
            "/usr/bin/env", ["python3", repositoryRoot + "/Tests/clients/dap_python_client.py", "\(BinaryRunner.binDirectory)/macro", daemon.socket, daemon.macros],
            environment: ["PYTHONPATH": Self.pythonPath])
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout.split(separator: "\n") == [
                "initialize True True",
                "stopped breakpoint",
                "stack lib/helpers.js:3:5 double < main.js:4:9 main",
                "stepped step main.js:4:9 main",
                "variables Locals i=1, n=3, total=0, more=<uninitialized>",
                "output result: 7",
                "exited 0",
                "adapter exit 0",
            ])
    }
}
