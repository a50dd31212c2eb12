import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro dashboard`: prints the daemon's dashboard URL (with its token) and, on a terminal,
/// opens it in a browser ($BROWSER, else xdg-open).
struct Dashboard: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Print the dashboard's URL (with its token) and open it in a browser.",
        discussion: """
            Asks macrod (engine.status) for the URL of its dashboard, which carries the access \
            token: only the socket's owner can ask. On a terminal the URL is also opened with \
            $BROWSER (the first command of a colon-separated list; %s is replaced by the URL), \
            else xdg-open; --no-open only prints it. The dashboard is on when macrod runs with \
            --http 127.0.0.1:PORT or the config's `http` key (exit 69 when it is off).
            """)
    @Flag(name: .customLong("no-open"), help: "Only print the URL, even on a terminal.")
    var noOpen = false
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "dashboard")
        let status: MacroValue
        do { status = try client.call("engine.status") } catch let error as RPCError { throw DaemonLink.report(error) }
        guard let url = status["dashboard"].stringValue else {
            throw Failure(exit: 69, kind: "unavailable", message: "macro dashboard: macrod serves no dashboard; start it with --http 127.0.0.1:0, or set http: \"127.0.0.1:0\" in its config")
        }
        if options.json {
            print(MacroValue.object(["url": .string(url)]).jsonText())
        } else {
            print(url)
        }
        guard Terminal.isInteractive, !noOpen, !options.json else { return }
        if let problem = Self.open(url) { Console.error("macro dashboard: \(problem); open the URL above yourself") }
    }

    /// Starts the browser without waiting for it; returns why it could not, or nil.
    static func open(_ url: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        var command: [String]
        if let browser = environment["BROWSER"]?.split(separator: ":").first.map(String.init), !browser.isEmpty {
            command = browser.split(separator: " ").map(String.init)
            if command.contains(where: { $0.contains("%s") }) {
                command = command.map { $0.replacingOccurrences(of: "%s", with: url) }
            } else {
                command.append(url)
            }
        } else {
            command = ["xdg-open", url]
        }
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(command[0])" }
        guard let executable = command[0].contains("/") ? command[0] : path.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return "no browser to open it with: \(command[0]) is not installed (set $BROWSER, or install xdg-utils)"
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return "cannot run \(command[0]): \(error)"
        }
        return nil
    }
}
