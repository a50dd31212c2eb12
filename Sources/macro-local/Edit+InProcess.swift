import Foundation
import MacroCLI
import MacroEngineCore
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// `macro edit`: the name checked against an engine's globals, the editor, then the new version
/// reported, as the daemon loaded it or as an engine in this process loads it.
extension Edit: InProcessCommand {
    func runInProcess() throws {
        try refuseUnusableName()
        var client = try DaemonLink.connect(options)
        let directory: String
        // The daemon's entry before the editor opens: what it says then is not about this save.
        var entryBefore: MacroValue?
        if let connected = client {
            do {
                directory = try connected.call(.status)["macrosDir"].stringValue ?? "macros"
                let entries = try connected.call(.list).arrayValue ?? []
                entryBefore = entries.first { $0["name"] == .string(name) }
            } catch let error as RPCError { throw DaemonLink.report(error) }
        } else {
            directory = try options.resolvedConfig().macrosDirectory
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw Failure(exit: 66, kind: "noSuchMacro", message: "no macros directory at \(directory) (set --macros or macros_dir in the config)")
            }
        }
        // Not kept open while the editor runs: the daemon would buffer notifications for it.
        client = nil
        let path = "\(directory)/\(name).js"
        let before = FileManager.default.contents(atPath: path)
        let draft = try before == nil ? Draft(name: name, template: Self.template(for: name)) : nil
        let editorCommand = EditorProcess.command()
        let outcome: EditorProcess.Outcome
        do {
            outcome = try EditorProcess.run(editorCommand, path: draft?.path ?? path)
        } catch {
            draft?.discard()
            throw Failure(exit: Exit.editorFailed.rawValue, kind: "editor", message: "\(error)")
        }
        let after = draft.map { FileManager.default.contents(atPath: $0.path) } ?? FileManager.default.contents(atPath: path)
        if outcome != .success {
            draft?.discard()
            throw Failure(exit: Exit.editorFailed.rawValue, kind: "editor", message: Self.describe(outcome, editor: editorCommand, created: draft != nil))
        }
        let unchanged = draft.map { after == Data($0.template.utf8) || after == nil } ?? (after == before)
        if unchanged {
            draft?.discard()
            report(
                status: "unchanged", path: path, version: entryBefore?["version"].intValue, text: draft == nil ? "\(path): no changes" : "\(name): nothing saved, no macro created")
            return
        }
        if let draft, let after {
            do {
                try AtomicFile.write(after, to: path, mode: 0o666 & ~Self.umask, durable: true)
            } catch let error as MacroError {
                throw Failure(exit: 74, kind: "io", message: "\(error.message); your text is kept in \(draft.path)")
            }
            draft.discard()
        }
        if let reconnected = try DaemonLink.connect(options) {
            try reportDaemonVerdict(reconnected, path: path, saved: after, before: entryBefore)
        } else {
            let session = try Session(options: options, loadState: false)
            _ = session.library.reloadLib()
            let entry = session.library.load(file: path)
            if let error = entry.error {
                Console.error(error.description)
                throw Failure.engine(error)
            }
            report(status: "valid", path: path, version: nil, text: Terminal.green("\(name) is valid"))
        }
    }

    /// Refuses a name that could never load, before any file is made.
    private func refuseUnusableName() throws {
        guard MacroName.isIdentifier(name) else {
            throw Failure(
                exit: 64, kind: "invalidName", message: "'\(name)' is not a valid macro name: use letters, digits, _ or $, not starting with a digit, and not a JavaScript keyword")
        }
        let engine = MacroEngine(configuration: .init(), logger: Session.quietLogger)
        try engine.add(ProgressModel(channels: (try? options.resolvedConfig().channels) ?? MacroConfig().channels))
        if (try? engine.isEngineGlobal(name)) == true {
            throw Failure(exit: 64, kind: "invalidName", message: "'\(name)' is an engine global; a macro with that name could never load. Choose another name")
        }
    }

    private static func describe(_ outcome: EditorProcess.Outcome, editor: String, created: Bool) -> String {
        let nothing = created ? "; no macro was created" : ""
        switch outcome {
        case .failed(status: 127): return "the editor '\(editor)' was not found (exit status 127); set $VISUAL or $EDITOR\(nothing)"
        case .failed(let status): return "the editor '\(editor)' exited with status \(status)\(nothing)"
        case .signalled(let signal): return "the editor '\(editor)' was killed by signal \(signal)\(nothing)"
        case .success: return "the editor '\(editor)' succeeded"
        }
    }

    private static var umask: mode_t {
        let current = Glibc.umask(0o022)
        _ = Glibc.umask(current)
        return current
    }

    /// The daemon's verdict on exactly the text that was saved. `macro.check` judges that text
    /// (a text that does not load is reported at once, whatever the daemon's list still says);
    /// a text that loads is then waited for until the daemon has loaded it.
    private func reportDaemonVerdict(_ client: RPCClient, path: String, saved: Data?, before: MacroValue?) throws {
        if let saved, let source = String(data: saved, encoding: .utf8) {
            do {
                _ = try client.call(.check, ["name": .string(name), "source": .string(source)])
            } catch let error as RPCError where error.code == RPCError.syntaxError {
                let data = error.data ?? .undefined
                let headline = data["errorName"].stringValue.map { "\($0): " + (data["message"].stringValue ?? "") } ?? error.message
                throw failure(file: data["file"].stringValue ?? path, line: data["line"].intValue, column: data["column"].intValue, message: headline, before: before)
            } catch let error as RPCError { throw DaemonLink.report(error) }
        }
        try awaitLoad(client, path: path, before: before)
    }

    /// Waits until the daemon has loaded the file: its entry `ok` with a version other than
    /// before the editor opened, or `error` with an error other than before (the load failed
    /// for a reason `macro.check` does not see, such as a file over 1 MiB). The entry as it was
    /// before is an earlier save's, and never the answer.
    private func awaitLoad(_ client: RPCClient, path: String, before: MacroValue?) throws {
        let deadline = Date().addingTimeInterval(Double(waitMs) / 1000)
        _ = try? client.call(.subscribe, ["events": ["macros"]])
        while Date() < deadline {
            let entries: [MacroValue]
            do { entries = try client.call(.list).arrayValue ?? [] } catch let error as RPCError { throw DaemonLink.report(error) }
            if let entry = entries.first(where: { $0["name"] == .string(name) }) {
                if entry["status"] == "ok", entry["version"] != (before?["version"] ?? .undefined) {
                    report(
                        status: "loaded", path: path, version: entry["version"].intValue, text: Terminal.green("\(name) loaded") + " (version \(entry["version"].intValue ?? 0))")
                    return
                }
                if entry["status"] == "error", entry["error"] != (before?["error"] ?? .undefined) {
                    let error = entry["error"]
                    throw failure(
                        file: entry["file"].stringValue ?? path, line: error["line"].intValue, column: error["column"].intValue, message: error["message"].stringValue ?? "",
                        before: before)
                }
            }
            // Wakes at the daemon's next macros notification, or after 0.1 s.
            client.setReceiveTimeout(seconds: 0.1)
            _ = try? client.nextNotification()
            client.setReceiveTimeout(seconds: 0)
        }
        throw Failure(exit: 75, kind: "timeout", message: "the daemon did not report \(name) within \(waitMs) ms")
    }

    /// Prints `file:line:column: error: message` and what stays live, and returns the exit-65 failure.
    private func failure(file: String, line: Int?, column: Int?, message: String, before: MacroValue?) -> Failure {
        Console.error("\(file):\(line ?? 0):\(column ?? 0): error: \(message)")
        let live = (before?["version"].intValue ?? 0) > 0
        Console.error(live ? "the previous version stays live until the file loads" : "\(name) is not registered until the file loads")
        var details: OrderedFields = ["macro": .string(name), "file": .string(file)]
        if let line { details["line"] = .number(Double(line)) }
        if let column { details["column"] = .number(Double(column)) }
        return Failure(exit: 65, kind: "syntax", message: message, details: details, printed: true)
    }

    private func report(status: String, path: String, version: Int?, text: String) {
        if options.json {
            var fields: OrderedFields = ["name": .string(name), "file": .string(path), "status": .string(status)]
            if let version { fields["version"] = .number(Double(version)) }
            Console.printJSON(.object(fields))
        } else {
            print(text)
        }
    }
}

/// A new macro's first text, in a private temporary directory until it is saved for real.
struct Draft {
    let directory: String
    let path: String
    let template: String

    init(name: String, template: String) throws {
        var pattern = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("macro-edit-XXXXXX").utf8CString)
        guard let made = mkdtemp(&pattern) else {
            throw Failure(exit: 74, kind: "io", message: "cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        path = directory + "/\(name).js"
        self.template = template
        try Data(template.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Removes the temporary directory.
    func discard() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
