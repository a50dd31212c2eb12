import ArgumentParser
import Foundation
import Logging
import MacroDaemon
import MacroEngineCore
import MacroHTTP
import MacroRPC
import ServiceLifecycle

/// `macrod`: the MacroEngine daemon.
@main
struct MacrodCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "macrod",
        abstract: "The MacroEngine daemon: runs macros for local clients over a Unix socket.",
        discussion: """
            Serves JSON-RPC 2.0 (one JSON text per line) on a Unix socket, and reloads a macro \
            file the moment it is saved. Try it with:

                macro status
                echo '{"jsonrpc":"2.0","id":1,"method":"macro.list"}' | socat -t 5 - UNIX-CONNECT:SOCKET

            Socket: --socket, else $MACROENGINE_SOCKET, else $XDG_RUNTIME_DIR/macroengine/macrod.sock, \
            else /tmp/macroengine-$UID/macrod.sock (directory 0700, socket 0600).

            Dashboard: --http 127.0.0.1:PORT (or `http` in the config; port 0 picks a free one) \
            serves a web page with the rings, the macros, an editor and the log, a WebSocket at /ws \
            carrying the same JSON-RPC, and POST /rpc. Every request needs the token macrod \
            writes beside the socket (macrod.sock -> macrod.token, mode 0600); `macro dashboard` \
            prints the URL with it and opens it. Only loopback addresses unless the config sets \
            http_allow_remote: true. MACROENGINE_CODEMIRROR_DIR: where CodeMirror 5 is \
            (default /usr/share/javascript/codemirror, Debian's libjs-codemirror).

            Signals: SIGTERM/SIGINT stop accepting, let calls in flight finish (shutdown_grace_ms), \
            write the state, remove the socket and exit 0 (74 when the state could not be saved). \
            SIGHUP re-reads the config and rescans the macros.

            Exit codes: 0 stopped cleanly, 64 usage, 71 cannot listen, 74 the state could not be \
            saved on shutdown, 75 another macrod \
            answers on the socket, 77 unsafe socket directory, 78 invalid config (a non-loopback \
            --http without http_allow_remote included).
            """,
        version: MacroEngineVersion.string)

    @Option(
        help: ArgumentHelp(
            "The config file (YAML). Default: $MACROENGINE_CONFIG, else ~/.config/macroengine/macroengine.yaml ($XDG_CONFIG_HOME/macroengine/macroengine.yaml) when it exists, else built-in defaults.",
            valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("The Unix socket to listen on.", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("The macros directory (overrides macros_dir).", valueName: "dir"))
    var macros: String?

    @Option(help: ArgumentHelp("The state file (overrides state_file).", valueName: "file"))
    var state: String?

    @Option(help: ArgumentHelp("Serve the dashboard on HOST:PORT, e.g. 127.0.0.1:0 (overrides http; port 0: a free port).", valueName: "host:port"))
    var http: String?

    @Option(name: .customLong("log-level"), help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (overrides log_level).", valueName: "level"))
    var logLevel: String?

    /// Internal: serve one debug session on standard input and output (macrod starts these).
    @Flag(name: .customLong("debug-worker"), help: .private)
    var debugWorker = false

    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let http, !http.isEmpty, HTTPAddress(parsing: http) == nil {
            throw ValidationError("--http must be HOST:PORT such as 127.0.0.1:8080 or [::1]:0, got '\(http)'")
        }
    }

    func run() async throws {
        if debugWorker {
            var logger = Logger(label: "macrod.debug-session") { StreamLogHandler.standardError(label: $0) }
            logger.logLevel = .warning
            DebugWorker.serve(logger: logger)
        }
        let configFile = MacroConfig.filePath(explicit: config)
        var settings = MacroConfig()
        if let configFile {
            do {
                settings = try MacroConfig.load(file: configFile)
            } catch {
                FileHandle.standardError.write(Data("macrod: invalid config: \(error)\n".utf8))
                throw ExitCode(78)
            }
        }
        if let macros { settings.macrosDirectory = macros }
        if let state { settings.stateFile = state }
        if let logLevel { settings.logLevel = Logger.Level(rawValue: logLevel)! }
        if let http { settings.http = http.isEmpty ? nil : HTTPAddress(parsing: http) }
        let socketPath = SocketPath.resolve(socket ?? settings.socket)
        settings.macrosDirectory = URL(fileURLWithPath: settings.macrosDirectory).standardizedFileURL.path

        var logger = Logger(label: "macrod") { [format = settings.logFormat] in DaemonLogHandler(label: $0, format: format) }
        logger.logLevel = settings.logLevel
        // MACROENGINE_CODEMIRROR_DIR: another copy of CodeMirror 5 than Debian's (or none: a plain editor).
        let codeMirror =
            ProcessInfo.processInfo.environment["MACROENGINE_CODEMIRROR_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/share/javascript/codemirror"
        // Left by a macrod that did not shut down (exit 70, kill -9): not while one still answers.
        if settings.http == nil, (try? RPCClient(path: socketPath)) == nil { DashboardServer.removeStaleFiles(forSocket: socketPath) }
        let dashboard = settings.http.map {
            DashboardServer(address: $0, config: settings, socketPath: socketPath, logger: logger, codeMirrorRoot: codeMirror)
        }
        let daemon = MacroDaemon(
            config: settings, socketPath: socketPath, configFile: configFile, version: MacroEngineVersion.string, logger: logger,
            frontends: dashboard.map { [$0] } ?? [])
        let group = ServiceGroup(
            configuration: .init(
                // The daemon returns by itself only when it shuts down (e.g. a shutdown that began
                // before an engine restart, carried over): that is a success, not a failure.
                services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "macrod.lifecycle") { _ in SwiftLogNoOpLogHandler() }))
        do {
            try await group.run()
        } catch let error as MacroDaemonError {
            logger.critical("\(error.message)")
            throw ExitCode(error.exitCode)
        } catch let error as ServiceGroupError {
            logger.critical("\(error)")
            throw ExitCode(70)
        }
    }
}
