import Foundation
import MacroTestSupport
import Testing

/// Emacs' dap-mode (Debian's `elpa-dap-mode`, installed by `make tool-deps`) debugs a macro
/// through `macro dap`, configured as README's Debugging section says, in `emacs --batch`.
@Suite("macro dap: Emacs dap-mode")
struct DapEmacsClientTests {
    @Test func dapModeStopsAtABreakpointStepsReadsVariablesAndRunsToTheEnd() throws {
        let present = try BinaryRunner.run("/bin/sh", ["-c", "command -v emacs && ls -d /usr/share/emacs/site-lisp/elpa/dap-mode-*"])
        try #require(present.status == 0, "emacs or dap-mode is missing: run `make tool-deps` (apt-get install emacs-nox elpa-dap-mode)\n\(present)")
        let daemon = try DaemonProcess(files: ["lib/helpers.js": DapTests.files["lib/helpers.js"]!, "main.js": DapTests.files["main.js"]!])
        let home = TemporaryDirectory(prefix: "emacs-home")
        let result = try BinaryRunner.run(
            "/usr/bin/env",
            [
                "emacs", "--batch", "-l", repositoryRoot + "/Tests/clients/dap_mode_client.el",
                "\(BinaryRunner.binDirectory)/macro", daemon.socket, daemon.macros,
            ],
            environment: ["HOME": home.path])
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout.split(separator: "\n") == [
                "stopped lib/helpers.js:3:5 double",
                "stack lib/helpers.js:3:5 double < main.js:4:9 main",
                "stepped main.js:4:9 main",
                "variables i=1, n=3, total=0, more=<uninitialized>",
                "terminated",
            ])
    }
}
