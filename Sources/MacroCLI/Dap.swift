import ArgumentParser
import MacroBase
import MacroRPC

/// `macro dap`.
package struct Dap: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "dap",
        abstract: "A Debug Adapter Protocol adapter on stdin/stdout: step-debug a macro from an editor.",
        discussion: """
            Speaks DAP (Content-Length framing) on stdin and stdout, and debugs through macrod's \
            debug.* methods: the session runs in an engine of its own on a copy of the progress \
            values, so stopping at a breakpoint holds up nothing else. Launch arguments: \
            {"macro": NAME, "args": [...], "stopOnEntry": false, "socket": PATH}. \
            See docs/debugging.md for editor configurations.
            """)

    @OptionGroup var daemon: DaemonOptions

    package init() {}

    package func run() throws {
        let options = EngineOptions(daemon)
        let fallback = try? DaemonLink.socketPath(options)
        let adapter = DapAdapter(framing: DapFraming()) { socket in
            if let socket, !socket.isEmpty { return socket }
            guard let fallback else { throw DapFramingError(message: "no socket: give \"socket\" in the launch arguments or --socket") }
            return fallback
        }
        try adapter.run()
    }
}
