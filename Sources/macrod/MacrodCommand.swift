import ArgumentParser
import Foundation
import Logging
import MacroDaemon
import MacroEngineCore
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

            Signals: SIGTERM/SIGINT stop accepting, let calls in flight finish (shutdown_grace_ms), \
            write the state, remove the socket and exit 0. SIGHUP re-reads the config and rescans the macros.

            Exit codes: 0 stopped cleanly, 64 usage, 71 cannot listen, 75 another macrod \
            answers on the socket, 77 unsafe socket directory, 78 invalid config.
            """,
        version: MacroEngineVersion.string)

    @Option(help: ArgumentHelp("The config file (YAML). Default: $MACROENGINE_CONFIG, else built-in defaults.", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("The Unix socket to listen on.", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("The macros directory (overrides macros_dir).", valueName: "dir"))
    var macros: String?

    @Option(help: ArgumentHelp("The state file (overrides state_file).", valueName: "file"))
    var state: String?

    @Option(name: .customLong("log-level"), help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (overrides log_level).", valueName: "level"))
    var logLevel: String?

    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() async throws {
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
        let socketPath = SocketPath.resolve(socket ?? settings.socket)
        settings.macrosDirectory = URL(fileURLWithPath: settings.macrosDirectory).standardizedFileURL.path

        var logger = Logger(label: "macrod") { DaemonLogHandler(label: $0) }
        logger.logLevel = settings.logLevel
        let daemon = MacroDaemon(config: settings, socketPath: socketPath, configFile: configFile, version: MacroEngineVersion.string, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: daemon)],
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
