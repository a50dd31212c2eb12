import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// `macro status`.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon's status: version, uptime, macros, calls, errors.")
    @OptionGroup var options: EngineOptions

    func run() throws {
        let client = try DaemonLink.require(options, for: "status")
        let status: MacroValue
        do { status = try client.call("engine.status") } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
        if options.json {
            print(status.jsonText())
            return
        }
        print("macrod \(status["version"].stringValue ?? "?") (pid \(status["pid"].intValue ?? 0)) on \(status["socket"].stringValue ?? "?")")
        print("uptime       \(String(format: "%.1f", status["uptime"].doubleValue ?? 0)) s")
        print("macros       \(status["macros"]["ok"].intValue ?? 0) ok, \(status["macros"]["broken"].intValue ?? 0) broken (\(status["macrosDir"].stringValue ?? ""))")
        print("calls        \(status["calls"].intValue ?? 0)")
        print("errors       \(status["errors"].intValue ?? 0)")
        print("connections  \(status["connections"].intValue ?? 0)")
        if let stateError = status["stateError"].stringValue { print(Terminal.red("state        cannot be saved: \(stateError)")) }
    }
}

/// `macro set CHANNEL VALUE`.
struct SetValue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set one progress channel (clamped to its range) and print the values.")
    @Argument(help: "The channel: inner, middle or outer (or a configured one).") var channel: String
    @Argument(help: "The value, a finite number.") var value: Double
    @OptionGroup var options: EngineOptions

    func validate() throws {
        guard value.isFinite else { throw ValidationError("VALUE must be a finite number") }
    }

    func run() throws {
        let values: [(String, Double)]
        if let client = try DaemonLink.connect(options) {
            do {
                let result = try client.call("progress.set", .object([channel: .number(value)]))
                values = (result.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }
            } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
        } else {
            let session = try Session(options: options, needsDirectory: false)
            do {
                try session.model.set(channel, to: value)
                try session.store.save(session.model.valuesByName)
            } catch let error as MacroError {
                Console.error("macro: \(error.message)")
                throw error.code == .io ? Exit.ioError : Exit.usage
            }
            values = session.model.values.map { ($0.channel, $0.value) }
        }
        Progress.show(values, json: options.json)
    }
}

/// `macro progress [--watch]`.
struct Progress: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the progress values as labelled bars; --watch redraws them live from the daemon.")
    @Flag(help: "Keep running and redraw on every change (needs macrod). With --json: one JSON line per change.")
    var watch = false
    @OptionGroup var options: EngineOptions

    func run() throws {
        if watch {
            let client = try DaemonLink.require(options, for: "progress --watch")
            try follow(client)
            return
        }
        if let client = try DaemonLink.connect(options) {
            do {
                let result = try client.call("progress.get")
                Self.show((result.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }, json: options.json)
            } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
        } else {
            let session = try Session(options: options, needsDirectory: false)
            Self.show(session.model.values.map { ($0.channel, $0.value) }, json: options.json)
        }
    }

    private func follow(_ client: RPCClient) throws {
        do {
            _ = try client.call("subscribe", ["events": ["progress"]])
            let current = try client.call("progress.get")
            var shown = Self.draw((current.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }, previous: 0, json: options.json)
            while let note = try client.nextNotification() {
                guard note["method"] == "progress.changed", case .object(var fields) = note["params"] else { continue }
                if options.json {
                    print(note["params"].jsonText())
                    fflush(nil)
                    continue
                }
                fields.removeValue(forKey: "seq")
                shown = Self.draw(fields.map { ($0.key, $0.value.doubleValue ?? 0) }, previous: shown, json: false)
            }
            Console.error("macro: macrod closed the connection")
            throw Exit.code(for: MacroError(code: .io, message: ""))
        } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
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

    static func show(_ values: [(String, Double)], json: Bool) {
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
        abstract: "Print macrod's recent log (last 200 records); --follow keeps printing new ones.")
    @Flag(name: .shortAndLong, help: "Keep running and print each new record.") var follow = false
    @Option(help: "How many recent records to print first.") var lines = 50
    @OptionGroup var options: EngineOptions

    func run() throws {
        let client = try DaemonLink.require(options, for: "logs")
        do {
            if follow { _ = try client.call("subscribe", ["events": ["log"]]) }
            let recent = try client.call("log.recent", ["limit": .number(Double(max(0, lines)))])
            for record in recent.arrayValue ?? [] { print(format(record)) }
            fflush(nil)
            guard follow else { return }
            while let note = try client.nextNotification() {
                guard note["method"] == "log" else { continue }
                print(format(note["params"]))
                fflush(nil)
            }
        } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
    }

    private func format(_ record: MacroValue) -> String {
        if options.json { return record.jsonText() }
        let level = record["level"].stringValue ?? "info"
        let metadata = (record["metadata"].objectValue ?? [:]).map { "\($0.key)=\($0.value.stringValue ?? $0.value.jsonText())" }.joined(separator: " ")
        let label = ["error", "critical"].contains(level) ? Terminal.red(level) : (level == "warning" ? Terminal.paint(level, "33") : level)
        return "\(label) \(record["message"].stringValue ?? "")\(metadata.isEmpty ? "" : " " + Terminal.dim(metadata))"
    }
}

/// `macro edit NAME`.
struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a macro in $EDITOR (a new one starts from a template), then report whether the new version loaded.")
    @Argument(help: "The macro's name.") var name: String
    @Option(help: ArgumentHelp("How long to wait for the daemon to load the saved file, in ms.", valueName: "ms")) var waitMs = 3000
    @OptionGroup var options: EngineOptions

    func run() throws {
        guard MacroName.isIdentifier(name) else {
            Console.error("macro: '\(name)' is not a valid macro name (letters, digits, _ or $, not starting with a digit)")
            throw Exit.usage
        }
        let client = try DaemonLink.connect(options)
        let directory: String
        if let client {
            do { directory = try client.call("engine.status")["macrosDir"].stringValue ?? "macros" } catch let error as RPCError {
                throw DaemonLink.report(error, json: options.json)
            }
            _ = try? client.call("subscribe", ["events": ["macros"]])
        } else {
            directory = try options.resolvedConfig().macrosDirectory
        }
        let path = "\(directory)/\(name).js"
        let before = FileManager.default.contents(atPath: path)
        if before == nil {
            try Data("// \(name): describe what it does.\nfunction() {\n    \n}\n".utf8).write(to: URL(fileURLWithPath: path))
        }
        let env = ProcessInfo.processInfo.environment
        let editor = [env["VISUAL"], env["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(editor) \"$1\"", "sh", path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            Console.error("macro: \(editor) exited with status \(process.terminationStatus)")
            throw Exit.internalError
        }
        if FileManager.default.contents(atPath: path) == before {
            print("\(path): no changes")
            return
        }
        if let client {
            try awaitReload(client)
        } else {
            let session = try Session(options: options, loadState: false)
            report(session.library.load(file: path))
        }
    }

    private func awaitReload(_ client: RPCClient) throws {
        // The daemon reloads on save; ask for the entry once the watcher has had its chance.
        let deadline = Date().addingTimeInterval(Double(waitMs) / 1000)
        while Date() < deadline {
            usleep(50_000)
            let entries = (try? client.call("macro.list").arrayValue) ?? []
            guard let entry = entries.first(where: { $0["name"] == .string(name) }) else { continue }
            if entry["status"] == "error" {
                let error = entry["error"]
                Console.error("\(entry["file"].stringValue ?? name):\(error["line"].intValue ?? 0):\(error["column"].intValue ?? 0): error: \(error["message"].stringValue ?? "")")
                Console.error("the previous version stays live until the file loads")
                throw Exit.macroThrew
            }
            print(Terminal.green("\(name) loaded") + " (version \(entry["version"].intValue ?? 0))")
            return
        }
        Console.error("macro: the daemon did not report \(name) within \(waitMs) ms")
        throw Exit.timeout
    }

    private func report(_ entry: MacroEntry) {
        if let error = entry.error {
            Console.error(error.description)
        } else {
            print(Terminal.green("\(name) is valid"))
        }
    }
}

/// `macro running`.
struct Running: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the daemon's calls in flight: call id, macro, elapsed time.")
    @OptionGroup var options: EngineOptions

    func run() throws {
        let client = try DaemonLink.require(options, for: "running")
        let calls: MacroValue
        do { calls = try client.call("macro.running") } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
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
        abstract: "Cancel a call in flight (see `macro running`); a runaway macro included. Its changes are rolled back.")
    @Argument(help: "The call id from `macro running`.") var call: Int
    @OptionGroup var options: EngineOptions

    func run() throws {
        let client = try DaemonLink.require(options, for: "cancel")
        do {
            _ = try client.call("macro.cancel", ["call": .number(Double(call))])
            print("cancelled call \(call)")
        } catch let error as RPCError { throw DaemonLink.report(error, json: options.json) }
    }
}
