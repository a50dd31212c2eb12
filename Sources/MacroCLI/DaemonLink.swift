import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// Chooses between macrod and the in-process engine, and maps daemon errors to exit codes.
package enum DaemonLink {
    /// The socket the command talks to, as macrod chooses its own: `--socket`, else the config's
    /// `socket` (`--config`, `$MACROENGINE_CONFIG` or the user's config file), else
    /// `$MACROENGINE_SOCKET`, else the default path.
    static func socketPath(_ options: EngineOptions) throws -> String {
        if let socket = options.socket, !socket.isEmpty { return socket }
        if options.configPath != nil, let configured = try options.resolvedConfig().socket { return configured }
        return SocketPath.resolve(nil)
    }

    /// A client for macrod, or nil when the command should run in-process: `--local`, or
    /// `--macros`/`--state` given without `--socket` (those describe a local setup), or no
    /// daemon answering. A config (`--config`) names its daemon through its `socket`; when one
    /// answers there, it is used. An explicit `--socket` that does not answer exits 69; a
    /// refused connection exits 77.
    package static func connect(_ options: EngineOptions) throws -> RPCClient? {
        if options.local { return nil }
        if options.socket == nil, options.macros != nil || options.state != nil { return nil }
        let path = try socketPath(options)
        do {
            return try RPCClient(path: path)
        } catch {
            if options.socket != nil || error.exitCode == Int32(RPCClient.ConnectError.refused) {
                throw failure(error, command: nil)
            }
            return nil
        }
    }

    /// Like ``connect(_:)`` but for commands that need the daemon: exits 69 when none answers.
    static func require(_ options: EngineOptions, for command: String) throws -> RPCClient {
        let path = try socketPath(options)
        do {
            return try RPCClient(path: path)
        } catch {
            throw failure(error, command: command)
        }
    }

    /// The failure for a connection error. Only "nothing listens" advises starting macrod; a
    /// refusal (permissions, uid not allowed) says so.
    static func failure(_ error: RPCClient.ConnectError, command: String?) -> Failure {
        let prefix = command.map { "macro \($0): " } ?? ""
        if error.exitCode == Int32(RPCClient.ConnectError.refused) {
            return Failure(exit: 77, kind: "refused", message: "\(prefix)\(error.description) (check the socket's owner and permissions, or the daemon's allowed_uids)")
        }
        let advice = command == nil ? "" : " (start it with `macrod` or `make run`)"
        return Failure(exit: 69, kind: "unavailable", message: "\(prefix)\(error.description)\(advice)")
    }

    /// The failure for a daemon's error reply: a macro's error printed like a local one
    /// (file:line:col, stack), anything else as one line.
    package static func report(_ error: RPCError) -> Failure {
        let exit = exitCode(for: error)
        if error.code == RPCError.macroThrew || error.code == RPCError.syntaxError || error.code == RPCError.timeout,
            let data = error.data
        {
            let macroError = MacroError(
                code: error.code == RPCError.timeout ? (data["reason"] == "cancelled" ? .cancelled : .timeout) : (error.code == RPCError.syntaxError ? .syntax : .threw),
                message: data["message"].stringValue ?? error.message,
                errorName: data["errorName"].stringValue, macro: data["name"].stringValue, file: data["file"].stringValue,
                line: data["line"].intValue, column: data["column"].intValue, stack: data["stack"].stringValue)
            Console.report(macroError)
            var failure = Failure.engine(macroError)
            failure.exit = exit
            failure.details["rpcCode"] = .number(Double(error.code))
            return failure
        }
        var details: OrderedFields = ["rpcCode": .number(Double(error.code))]
        if let data = error.data { details["data"] = data }
        let kind: String
        switch error.code {
        case RPCError.busy: kind = "busy"
        case RPCError.noSuchMacro: kind = "noSuchMacro"
        case RPCError.forbidden: kind = "refused"
        case RPCError.internalError where isDisconnect(error): kind = "unavailable"
        case RPCError.quarantined: kind = "quarantined"
        case RPCError.paused: kind = "paused"
        case RPCError.engineRestarted: kind = "restarted"
        default: kind = Failure.kind(forExit: exit)
        }
        return Failure(exit: exit, kind: kind, message: error.message, details: details)
    }

    /// The failure of a command that followed the daemon until it went away.
    static func stopped(_ client: RPCClient, command: String) -> Failure {
        Failure(exit: 69, kind: "unavailable", message: "macro \(command): macrod at \(client.path) stopped (the connection closed)")
    }

    /// True for the client's errors that mean the connection is gone.
    static func isDisconnect(_ error: RPCError) -> Bool {
        error.code == RPCError.internalError
            && ["closed the connection", "broke", "reading from"].contains { error.message.contains($0) }
    }

    static func exitCode(for error: RPCError) -> Int32 {
        switch error.code {
        case RPCError.macroThrew, RPCError.syntaxError: return 65
        // Temporary: a timeout, a full queue, a restart under the request (send it again), a
        // quarantine (lifted by a save or `macro unquarantine`).
        case RPCError.timeout, RPCError.busy, RPCError.engineRestarted, RPCError.quarantined: return 75
        // JavaScript is paused (`macro resume`): the service is unavailable.
        case RPCError.paused: return 69
        case RPCError.noSuchMacro: return 66
        case RPCError.forbidden: return 77
        case RPCError.invalidParams, RPCError.invalidRequest, RPCError.methodNotFound: return 64
        // The connection broke or closed: the daemon went away.
        case RPCError.internalError where isDisconnect(error): return 69
        // A kept version whose content is damaged: a data error.
        case RPCError.internalError where error.data?["reason"] == "corrupt": return 74
        // A rollback another writer's save overtook: temporary, try again.
        case RPCError.internalError where error.data?["reason"] == "conflict": return 75
        default: return 70
        }
    }
}
