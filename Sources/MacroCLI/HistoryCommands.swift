import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `NAME@N` as the history commands take it: a macro (or `lib/NAME`) and a version number.
struct VersionReference: Equatable {
    var name: String
    var number: Int

    /// Parses `NAME@N` (the last `@` splits); throws a usage failure naming the form.
    init(parsing text: String) throws {
        guard let at = text.lastIndex(of: "@"), let number = Int(text[text.index(after: at)...]), number >= 1, at != text.startIndex else {
            throw Failure(exit: 64, kind: "usage", message: "'\(text)' is not NAME@VERSION (such as bump@3; `macro history NAME` lists the versions)")
        }
        name = String(text[..<at])
        self.number = number
    }
}

/// `macro history NAME`.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the kept versions of a macro (or lib/NAME), numbered from 1, newest last.",
        discussion: """
            macrod keeps every version of every macro and lib file that went live, however it \
            was saved: `macro edit` or any editor writing the file, the socket (macro.save), the \
            dashboard. Each line: the version, when it was kept, its size, the start of its \
            SHA-256, who saved it; `*` marks the version the file holds now. How many are kept: \
            history_versions and history_bytes (docs/configuration.md).

            Examples:
              macro history bump
              macro diff bump@2 bump@4       what changed between two versions
              macro diff bump@2              from version 2 to the file as it is now
              macro rollback bump@2          write version 2 back and load it
            """)
    @Argument(help: "The macro's name, or lib/NAME.", completion: .custom(Completions.macroNames)) var name: String
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "history")
        let result: MacroValue
        do { result = try client.call(.history, ["name": .string(name)]) } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json { return Console.printJSON(result) }
        for line in Self.lines(result) { print(line) }
    }

    /// The table: `VERSION  TIME  BYTES  HASH  WHO`, the current version marked with `*`.
    static func lines(_ result: MacroValue) -> [String] {
        let versions = result["versions"].arrayValue ?? []
        var cells = [[" ", "VERSION", "TIME", "BYTES", "HASH", "WHO"]]
        for version in versions {
            cells.append([
                version["version"] == result["current"] ? "*" : " ", String(version["version"].intValue ?? 0), version["time"].stringValue ?? "",
                String(version["bytes"].intValue ?? 0), String((version["hash"].stringValue ?? "").prefix(12)), version["who"].stringValue ?? "",
            ])
        }
        let widths = (0..<6).map { column in cells.map { $0[column].count }.max() ?? 0 }
        return cells.map { row in
            row.enumerated().map { column, cell in
                column == 5 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: " ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }
}

/// `macro diff NAME@A [NAME@B]`.
struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show what changed between two kept versions of a macro, or from one to the file now.",
        discussion: """
            A unified diff (as `diff -u`), from version A to version B, or to the file as it is \
            now when B is left out. `macro history NAME` lists the versions. A version whose \
            content is damaged (it does not match its hash) exits 74.

            Examples:
              macro diff bump@2 bump@4
              macro diff bump@2
              macro diff lib/rings@1
            """)
    @Argument(help: "The version to compare from: NAME@A.") var from: String
    @Argument(help: "The version to compare to: NAME@B (default: the file now).") var to: String?
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let old = try VersionReference(parsing: from)
        var params: OrderedFields = ["name": .string(old.name), "from": .number(Double(old.number))]
        if let to {
            let new = try VersionReference(parsing: to)
            guard new.name == old.name else {
                throw Failure(exit: 64, kind: "usage", message: "both versions must be of one file (\(old.name), \(new.name))")
            }
            params["to"] = .number(Double(new.number))
        }
        let client = try DaemonLink.require(options, for: "diff")
        let result: MacroValue
        do { result = try client.call(.diff, .object(params)) } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json { return Console.printJSON(result) }
        let text = result["diff"].stringValue ?? ""
        if text.isEmpty { Console.error("no differences") } else { print(text, terminator: "") }
    }
}

/// `macro rollback NAME@A`.
struct Rollback: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Write a kept version of a macro (or lib/NAME) back to its file and load it.",
        discussion: """
            The file is written atomically and loaded as any save is, so it becomes the newest \
            version in `macro history`. A version that no longer loads (it imports a name a lib \
            module no longer exports, say) is refused with its error, exit 65: the file stays as \
            it was and the current version keeps serving. A version whose content is damaged \
            exits 74; when another writer (an editor) saves the file while it is restored, the \
            rollback is refused, exit 75, and that writer's text is live.

            Examples:
              macro history bump
              macro rollback bump@2
            """)
    @Argument(help: "The version to restore: NAME@A.") var version: String
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let reference = try VersionReference(parsing: version)
        let client = try DaemonLink.require(options, for: "rollback")
        let result: MacroValue
        do {
            result = try client.call(.rollback, ["name": .string(reference.name), "version": .number(Double(reference.number))])
        } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json { return Console.printJSON(result) }
        if result["unchanged"] == true {
            print("\(reference.name): the file already holds version \(reference.number)")
        } else {
            print("\(reference.name): version \(reference.number) restored and live, as version \(result["version"].intValue ?? 0)")
        }
    }
}

/// `macro audit`.
struct Audit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show who changed what: saves, rollbacks, deletes, quarantines, config reloads, progress.set, store edits.",
        discussion: """
            Each line: the time, the kind of change, who made it (the socket with the peer's uid \
            and pid, a dashboard session, a file written on disk, macrod itself, a signal), the \
            file, and the version hashes before -> after. `--json` prints one JSON object per \
            line. macrod keeps audit_entries events (docs/configuration.md), across restarts.

            Examples:
              macro audit
              macro audit --name bump --lines 5
              macro audit --kind save --json
            """)
    @Option(help: "Only the changes of this macro (or lib/NAME).") var name: String?
    @Option(help: "Only changes of this kind (save, rollback, delete, quarantine, unquarantine, configReload, progressSet, storeEdit).") var kind: String?
    @Option(help: "How many of the newest to show.") var lines = 50
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        guard lines >= 1 else { throw Failure(exit: 64, kind: "usage", message: "--lines must be at least 1") }
        var params: OrderedFields = ["limit": .number(Double(lines))]
        if let name { params["name"] = .string(name) }
        if let kind { params["kind"] = .string(kind) }
        let client = try DaemonLink.require(options, for: "audit")
        let events: [MacroValue]
        do { events = try client.call(.auditRecent, .object(params)).arrayValue ?? [] } catch let error as RPCError { throw DaemonLink.report(error) }
        for event in events { print(options.json ? event.jsonText(pretty: false) : Self.line(event)) }
    }

    /// One event in words: `TIME KIND WHO NAME BEFORE -> AFTER (vN)`, hashes cut to 12 digits.
    static func line(_ event: MacroValue) -> String {
        let who = event["who"]
        var whom = who["surface"].stringValue ?? ""
        for key in ["uid", "pid", "session"] { if let n = who[key].intValue { whom += " \(key) \(n)" } }
        var parts = [event["time"].stringValue ?? "", event["kind"].stringValue ?? "", whom]
        if let name = event["name"].stringValue { parts.append(name) }
        let short = { (hash: MacroValue) in hash.stringValue.map { String($0.prefix(12)) } ?? "-" }
        if event["before"] != .undefined || event["after"] != .undefined { parts.append("\(short(event["before"])) -> \(short(event["after"]))") }
        if let version = event["version"].intValue { parts.append("(v\(version))") }
        if event["details"] != .undefined { parts.append(event["details"].jsonText(pretty: false)) }
        return parts.joined(separator: "  ")
    }
}
