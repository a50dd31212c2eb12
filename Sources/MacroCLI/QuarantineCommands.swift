import ArgumentParser
import MacroBase
import MacroRPC

/// `macro unquarantine NAME`.
struct Unquarantine: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unquarantine",
        abstract: "Let a quarantined macro (or lib/NAME) run again and load its file.",
        discussion: """
            macrod quarantines a macro whose code stalled the engine (kept it busy past its time \
            limit plus stall_grace_ms in a way it could not interrupt, e.g. `for (;;) await null`) \
            stall_quarantine times (default 2) within 60 s, and a file that stalls while it loads: \
            its calls are refused at once (JSON-RPC -32007) instead of restarting the engine \
            again. `macro list` shows it as quarantined, `macro status` says why. Saving a new \
            version of the file lifts the quarantine too.

            Examples:
              macro unquarantine wedge
              macro unquarantine lib/rings
            """)
    @Argument(help: "The macro's name, or lib/NAME for a lib file.") var name: String
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "unquarantine")
        do {
            let result = try client.call(.unquarantine, ["name": .string(name)])
            if options.json { return Console.printJSON(result) }
            let status = result["status"].stringValue.map { ", now \($0)" } ?? ""
            print("lifted the quarantine of \(name) (\(result["stalls"].intValue ?? 0) stall(s))\(status)")
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }
}

/// `macro resume`.
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Run JavaScript again after macrod paused it, and load the macros again.",
        discussion: """
            macrod never exits because of a macro. When its engine stalls more than 5 times \
            within 60 s in code no macro file answers for (engine.eval, its own runs), it keeps \
            serving with JavaScript paused: control, status, progress.get and the dashboard \
            answer, calls get JSON-RPC -32008. `macro status` shows it. This runs JavaScript again.
            """)
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "resume")
        do {
            let result = try client.call(.resume)
            if options.json { return Console.printJSON(result) }
            print(result["resumed"] == .bool(true) ? "JavaScript runs again; the macros were loaded again" : "JavaScript was not paused")
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }
}
