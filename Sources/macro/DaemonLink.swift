import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// Chooses between macrod and the in-process engine, and maps daemon errors to exit codes.
enum DaemonLink {
    /// A client for macrod, or nil when the command should run in-process:
    /// `--local`, or `--macros`/`--state`/`--config` given without `--socket` (those name a
    /// local setup), or no daemon answering on the default socket. An explicit `--socket` that
    /// does not answer exits 69 (77 when refused).
    static func connect(_ options: EngineOptions) throws -> RPCClient? {
        if options.local { return nil }
        if options.socket == nil, options.macros != nil || options.state != nil || options.config != nil { return nil }
        let path = SocketPath.resolve(options.socket)
        do {
            return try RPCClient(path: path)
        } catch {
            if options.socket != nil || error.exitCode == Int32(RPCClient.ConnectError.refused) {
                Console.error("macro: \(error.description)")
                throw ExitCode(error.exitCode)
            }
            return nil
        }
    }

    /// Like ``connect(_:)`` but for commands that need the daemon: exits 69 when none answers.
    static func require(_ options: EngineOptions, for command: String) throws -> RPCClient {
        let path = SocketPath.resolve(options.socket)
        do {
            return try RPCClient(path: path)
        } catch {
            Console.error("macro \(command): \(error.description) (start it with `macrod` or `make run`)")
            throw ExitCode(error.exitCode)
        }
    }

    /// Prints a daemon error like a local one and returns the exit code.
    static func report(_ error: RPCError, json: Bool) -> ExitCode {
        if error.code == RPCError.macroThrew || error.code == RPCError.syntaxError || error.code == RPCError.timeout,
            let data = error.data {
            let macroError = MacroError(
                code: error.code == RPCError.timeout ? .timeout : (error.code == RPCError.syntaxError ? .syntax : .threw),
                message: data["message"].stringValue ?? error.message,
                errorName: data["errorName"].stringValue, macro: data["name"].stringValue, file: data["file"].stringValue,
                line: data["line"].intValue, column: data["column"].intValue, stack: data["stack"].stringValue)
            Console.report(macroError)
            if json { print(MacroValue.object(["error": Console.json(macroError)]).jsonText()) }
        } else {
            Console.error("macro: \(error.message)")
            if json { print(MacroValue.object(["error": error.json]).jsonText()) }
        }
        return ExitCode(exitCode(for: error))
    }

    static func exitCode(for error: RPCError) -> Int32 {
        switch error.code {
        case RPCError.macroThrew, RPCError.syntaxError: return 65
        case RPCError.timeout, RPCError.busy: return 75
        case RPCError.noSuchMacro: return 66
        case RPCError.forbidden: return 77
        case RPCError.invalidParams, RPCError.invalidRequest, RPCError.methodNotFound: return 64
        default: return 70
        }
    }
}

