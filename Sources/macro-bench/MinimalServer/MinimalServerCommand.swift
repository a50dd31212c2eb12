import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// `macro-bench minimal-server` (hidden): the benchmark's floor anchor, started by
/// ``MinimalServer`` as a child process. Serves `macro.call` of the benchmark macro on `--socket`
/// until it is killed; it is not a tool of its own.
struct MinimalServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "minimal-server",
        abstract: "The benchmark's floor: macrod's essential work for one macro.call, on an epoll loop of its own.",
        shouldDisplay: false)

    @Option(help: "The Unix socket to listen on (replaced if it exists).")
    var socket: String

    @Option(help: "The journal file: one line per changing call, appended with one write per loop tick.")
    var journal: String

    func run() throws {
        // A client that leaves while its replies are written must not end the server.
        signal(SIGPIPE, SIG_IGN)
        let macro = try MinimalMacroCall(name: "add", source: Macrod.addMacro)
        let loop = try MinimalEventLoop(socketPath: socket, journalPath: journal, macro: macro)
        try loop.run()
    }
}
