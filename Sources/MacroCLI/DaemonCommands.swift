import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro status`.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the daemon's status: version, uptime, macros and lib files, calls, errors.")
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "status")
        let status: MacroValue
        do { status = try client.call(.status) } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json {
            print(status.jsonText())
            return
        }
        print("macrod \(status["version"].stringValue ?? "?") (pid \(status["pid"].intValue ?? 0)) on \(status["socket"].stringValue ?? "?")")
        print("uptime       \(String(format: "%.1f", status["uptime"].doubleValue ?? 0)) s")
        print("macros       \(status["macros"]["ok"].intValue ?? 0) ok, \(status["macros"]["broken"].intValue ?? 0) broken (\(status["macrosDir"].stringValue ?? ""))")
        if case .object = status["lib"] {
            let broken = status["lib"]["broken"].intValue ?? 0
            let text = "lib          \(status["lib"]["ok"].intValue ?? 0) ok, \(broken) broken"
            print(broken > 0 ? Terminal.red(text) : text)
        }
        print("calls        \(status["calls"].intValue ?? 0) macro calls")
        print("errors       \(status["errors"].intValue ?? 0) failed requests, of every method")
        print("connections  \(status["connections"].intValue ?? 0)")
        if let stateError = status["stateError"].stringValue { print(Terminal.red("state        cannot be saved: \(stateError)")) }
        if let paused = status["paused"].stringValue { print(Terminal.red("javascript   paused: \(paused)")) }
        for file in status["quarantined"].arrayValue ?? [] {
            print(Terminal.red("quarantined  \(file["name"].stringValue ?? "?"): \(file["reason"].stringValue ?? "")"))
            print("             \(file["remedy"].stringValue ?? "")")
        }
    }
}

/// `macro set CHANNEL VALUE`.
package struct SetValue: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set one progress channel (clamped to its range) and print the values.")
    @Argument(help: "The channel: inner, middle or outer (or a configured one).", completion: .custom(Completions.channelNames)) package var channel: String
    @Argument(help: "The value, a finite number (negative ones too: macro set inner -2).") package var value: Double
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    package var options: EngineOptions { EngineOptions(daemon, local, state: stateOption) }

    package init() {}

    package func validate() throws {
        guard value.isFinite else { throw ValidationError("VALUE must be a finite number") }
    }

    package func run() throws {
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        let values: [(String, Double)]
        do {
            let result = try client.call(.progressSet, .object([channel: .number(value)]))
            values = (result.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }
        } catch let error as RPCError { throw DaemonLink.report(error) }
        Progress.show(values, json: options.json)
    }
}

/// `macro progress [--watch]`.
package struct Progress: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "progress",
        abstract: "Show the progress values as labelled bars; --watch redraws them live from the daemon.")
    @Flag(help: "Keep running and redraw on every change (needs macrod; exits 69 when it stops). With --json: one JSON line per change.")
    var watch = false
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    package var options: EngineOptions { EngineOptions(daemon, local, state: stateOption) }

    package init() {}

    package func run() throws {
        if watch {
            let client = try DaemonLink.require(options, for: "progress --watch")
            if !options.json { Console.error("watching macrod's progress (Ctrl-C to quit)") }
            try follow(client)
            return
        }
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        do {
            let result = try client.call(.progressGet)
            Self.show((result.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }, json: options.json)
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    private func follow(_ client: RPCClient) throws {
        do {
            _ = try client.call(.subscribe, ["events": ["progress"]])
            let current = try client.call(.progressGet)
            var shown = Self.draw((current.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }, previous: 0, json: options.json)
            while let note = try client.nextNotification() {
                guard note["method"] == .string(RPCNotification.progressChanged.rawValue), case .object(var fields) = note["params"] else { continue }
                if options.json {
                    print(note["params"].jsonText())
                    fflush(nil)
                    continue
                }
                fields.removeValue(forKey: "seq")
                shown = Self.draw(fields.map { ($0.key, $0.value.doubleValue ?? 0) }, previous: shown, json: false)
            }
            throw DaemonLink.stopped(client, command: "progress --watch")
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    /// Draws the bars (replacing the previous drawing on a terminal); returns the lines drawn.
    static func draw(_ values: [(String, Double)], previous: Int, json: Bool) -> Int {
        if json {
            show(values, json: true)
            fflush(nil)
            return 0
        }
        Terminal.rewind(previous)
        let lines = Terminal.bars(values)
        for line in lines { print(line) }
        if !Terminal.isInteractive { print("") }
        fflush(nil)
        return lines.count
    }

    /// Prints the values as labelled bars, or as one JSON object.
    package static func show(_ values: [(String, Double)], json: Bool) {
        if json {
            var fields = OrderedFields()
            for (channel, value) in values { fields[channel] = .number(value) }
            print(MacroValue.object(fields).jsonText())
        } else {
            for line in Terminal.bars(values) { print(line) }
        }
    }
}

/// `macro logs [--follow]`.
struct Logs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Print macrod's recent log with timestamps (--lines, default 50, of the 200 it keeps); --follow keeps printing new ones.")
    @Flag(name: .shortAndLong, help: "Keep running and print each new record (exits 69 when macrod stops).") var follow = false
    @Option(help: ArgumentHelp("How many recent records to print first (the daemon keeps the last 200).", valueName: "n")) var lines = 50
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func validate() throws {
        guard lines >= 0 else { throw ValidationError("--lines must be 0 or more, got \(lines)") }
    }

    func run() throws {
        let client = try DaemonLink.require(options, for: "logs")
        do {
            if follow { _ = try client.call(.subscribe, ["events": ["log"]]) }
            let recent = try client.call(.logRecent, ["limit": .number(Double(lines))])
            for record in recent.arrayValue ?? [] { print(format(record)) }
            fflush(nil)
            guard follow else { return }
            while let note = try client.nextNotification() {
                guard note["method"] == "log" else { continue }
                print(format(note["params"]))
                fflush(nil)
            }
            throw DaemonLink.stopped(client, command: "logs --follow")
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    /// `2026-11-22 07:12:33.123 info message key=value`, the time in local time.
    private func format(_ record: MacroValue) -> String {
        if options.json { return record.jsonText() }
        let level = record["level"].stringValue ?? "info"
        let metadata = (record["metadata"].objectValue ?? [:]).map { "\($0.key)=\($0.value.stringValue ?? $0.value.jsonText())" }.joined(separator: " ")
        let label = ["error", "critical"].contains(level) ? Terminal.red(level) : (level == "warning" ? Terminal.paint(level, "33") : level)
        let time = record["time"].stringValue.map { Terminal.dim(LogTime.local($0)) + " " } ?? ""
        return "\(time)\(label) \(record["message"].stringValue ?? "")\(metadata.isEmpty ? "" : " " + Terminal.dim(metadata))"
    }
}

/// `macro running`.
struct Running: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "running", abstract: "List the daemon's calls in flight: call id, macro, elapsed time.")
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "running")
        let calls: MacroValue
        do { calls = try client.call(.running) } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json {
            print(calls.jsonText())
            return
        }
        let list = calls.arrayValue ?? []
        if list.isEmpty {
            Console.error("no calls in flight")
            return
        }
        print("CALL  MACRO                 ELAPSED")
        for call in list {
            let id = String(call["call"].intValue ?? 0).padding(toLength: 4, withPad: " ", startingAt: 0)
            let name = (call["name"].stringValue ?? "").padding(toLength: 20, withPad: " ", startingAt: 0)
            print("\(id)  \(name)  \(call["elapsedMs"].intValue ?? 0) ms")
        }
    }
}

/// `macro cancel CALL`.
struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a call in flight (see `macro running`); a runaway macro included. Its changes are rolled back.")
    @Argument(help: "The call id from `macro running`.") var call: Int
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "cancel")
        do {
            _ = try client.call(.cancel, ["call": .number(Double(call))])
            if options.json { Console.printJSON(["cancelled": .number(Double(call))]) } else { print("cancelled call \(call)") }
        } catch let error as RPCError where error.code == RPCError.invalidParams && error.message.contains("no call \(call) is running") {
            // Not a usage error: the call is not (or no longer) running, like a macro that does not exist.
            throw Failure(exit: 66, kind: "noSuchCall", message: "no call \(call) is running (see `macro running`)")
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }
}
