import CJavaScriptCore
import Logging

/// A `console.*` call from a macro.
public struct ConsoleMessage: Sendable, Equatable {
    /// `log` and `info` -> info, `warn` -> warning, `error` -> error, `debug` -> debug.
    public var level: Logger.Level
    /// The arguments formatted as Node's `console.log` would (strings as they are, other values
    /// inspected: depth-limited, cycle-safe).
    public var message: String
    /// The macro whose code logged it, when known.
    public var macro: String?
    /// The console function called: `log`, `info`, `warn`, `error` or `debug`.
    public var method: String
    /// The id of the call (``RunningCall/id``) whose code logged it, its timers and awaited
    /// continuations included, while that call is pending; nil outside a call.
    public var call: Int?

    /// Creates a message.
    public init(level: Logger.Level, message: String, macro: String? = nil, method: String = "log", call: Int? = nil) {
        self.level = level
        self.message = message
        self.macro = macro
        self.method = method
        self.call = call
    }
}

extension MacroEngine {
    /// Installs the `console` object. Called once from init, on the loop.
    func installConsole(runtime: JSRuntime) throws {
        let levels: [(String, Logger.Level)] = [("log", .info), ("info", .info), ("warn", .warning), ("error", .error), ("debug", .debug)]
        // The factory's arguments are protected as they are made (``RootedValues``): each one
        // made may collect the ones before it.
        var args = RootedValues(runtime.context.ref, capacity: levels.count + 2)
        args.append(try runtime.evaluateRaw(Self.inspectSource, file: nil).ref)
        for (name, level) in levels {
            let emitter = runtime.makeFunction(name: "console.\(name)") { [weak self] args in
                guard let self else { throw MacroError.engineGone }
                let runtime = self.runtime.value
                let call = runtime.currentCall
                let message = ConsoleMessage(
                    level: level, message: MacroError.hidingInternalFrames(args.first?.string ?? ""), macro: call?.macro, method: name,
                    call: call.flatMap { $0.finished ? nil : $0.id })
                if let call, !call.finished { call.runs?.console(call: call.id, level: name, message: message.message) }
                self.consoleHandler(message)
                return runtime.context.undefined
            }
            args.append(emitter.ref)
        }
        args.append(runtime.context.string(levels.map(\.0).joined(separator: ",")).ref)
        let factory = try runtime.evaluateRaw(
            """
            (function (format) {
              var emitters = Array.prototype.slice.call(arguments, 1, arguments.length - 1);
              var names = arguments[arguments.length - 1].split(",");
              var console = {};
              names.forEach(function (name, i) {
                Object.defineProperty(console, name, {
                  value: function () {
                    // A console line is at most 65,536 characters: the rest is cut before it
                    // leaves JavaScript (the log, its ring and every subscriber get the short line).
                    var line = format(Array.prototype.slice.call(arguments));
                    if (line.length > 65536) line = line.slice(0, 65536) + "\\u2026 [" + (line.length - 65536) + " more characters cut]";
                    emitters[i](line);
                  },
                  enumerable: true,
                });
              });
              return Object.freeze(console);
            })
            """, file: nil)
        let console = try args.withArguments { try runtime.call(factory.objectRef!, arguments: UnsafeBufferPointer(start: $0, count: $1), macro: nil) }
        runtime.defineGlobal("console", console, readOnly: true)
    }

    /// Formats console arguments like Node (see ``ConsoleFormat/javascript``, shared with the REPL).
    static let inspectSource = ConsoleFormat.javascript
}
