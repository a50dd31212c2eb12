/// An error from the engine: a macro that threw, a timeout, a file that does not load, a value that
/// cannot be converted. Modelled on swift-nio's `FileSystemError`: a stable ``code`` to switch on,
/// and the fields a person needs to find the problem.
public struct MacroError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case threw, timeout, syntax, notAFunction, noSuchMacro, invalidName, conversion, io, invalidArgument, cancelled, memoryLimit
            case quarantined, paused
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// JavaScript threw (or the macro rejected): ``MacroError/message``, position and stack say where.
        public static let threw = Code(.threw)
        /// The evaluation ran past its time limit and was terminated.
        public static let timeout = Code(.timeout)
        /// The source does not parse.
        public static let syntax = Code(.syntax)
        /// A macro file evaluated to something other than a function.
        public static let notAFunction = Code(.notAFunction)
        /// No macro or global function has that name.
        public static let noSuchMacro = Code(.noSuchMacro)
        /// A macro name that is not an identifier, or that would shadow an engine global.
        public static let invalidName = Code(.invalidName)
        /// A value that cannot cross between Swift and JavaScript (cyclic, a Symbol, too deep).
        public static let conversion = Code(.conversion)
        /// A file could not be read or written, or is not UTF-8.
        public static let io = Code(.io)
        /// An argument from Swift was rejected (e.g. a non-finite progress value).
        public static let invalidArgument = Code(.invalidArgument)
        /// The call was cancelled before it finished.
        public static let cancelled = Code(.cancelled)
        /// The macro was stopped because the engine's memory passed its limit.
        public static let memoryLimit = Code(.memoryLimit)
        /// The file's code stalled the engine (``MacroError/message`` says how often): it is not
        /// run until its content changes or the quarantine is lifted.
        public static let quarantined = Code(.quarantined)
        /// JavaScript is paused: the engine stalled too often in code no file answers for.
        public static let paused = Code(.paused)

        /// The code's name, e.g. `threw`.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The message (for JavaScript errors, the error's `message`).
    public var message: String
    /// The JavaScript error name (`TypeError`, `SyntaxError`, ...), when JavaScript produced it.
    public var errorName: String?
    /// The macro being loaded or called.
    public var macro: String?
    /// The file the error points into.
    public var file: String?
    /// One-based line, as an editor shows it.
    public var line: Int?
    /// One-based column, as an editor shows it.
    public var column: Int?
    /// The JavaScript stack, one frame per line (`name@file:line:column`).
    public var stack: String?

    /// Creates an error.
    public init(
        code: Code, message: String, errorName: String? = nil, macro: String? = nil,
        file: String? = nil, line: Int? = nil, column: Int? = nil, stack: String? = nil
    ) {
        self.code = code
        self.message = message
        self.errorName = errorName
        self.macro = macro
        self.file = file
        self.line = line
        self.column = column
        self.stack = stack
    }

    /// `file:line:column`, as much of it as is known.
    public var location: String? {
        guard let file else { return nil }
        guard let line else { return file }
        guard let column else { return "\(file):\(line)" }
        return "\(file):\(line):\(column)"
    }

    /// `Name: message` for JavaScript errors, the message otherwise.
    public var headline: String {
        if let errorName, !errorName.isEmpty { return "\(errorName): \(message)" }
        return message
    }

    /// Compiler-style: `file:line:column: error: Name: message`.
    public var description: String {
        if let location { return "\(location): error: \(headline)" }
        if let macro { return "\(macro): error: \(headline)" }
        return "error: \(headline)"
    }
}

extension MacroError {
    /// `text` (a stack, or console output that shows one) without the engine's own frames
    /// (`__macroengine_invoke@`, the REPL's helpers): they are not the macro's business.
    public static func hidingInternalFrames(_ text: String) -> String {
        guard text.contains("__macroengine_") || text.contains("__repl") else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { line in
                var frame = line.drop { $0 == " " || $0 == "\t" }
                if frame.hasPrefix("at ") { frame = frame.dropFirst(3) }
                return !(frame.hasPrefix("__macroengine_") || frame.hasPrefix("__repl")) || !frame.contains("@")
            }
            .joined(separator: "\n")
    }

    /// An `.invalidArgument` error that JavaScript sees as a `TypeError`.
    package static func typeError(_ message: String) -> MacroError {
        MacroError(code: .invalidArgument, message: message, errorName: "TypeError")
    }
    /// A `.conversion` error (a value that cannot cross between Swift and JavaScript), a `TypeError` in JavaScript.
    package static func conversion(_ message: String) -> MacroError {
        MacroError(code: .conversion, message: message, errorName: "TypeError")
    }
}

extension MacroError {
    /// A native function called after its engine was released (JavaScript can hold natives longer).
    package static var engineGone: MacroError { MacroError(code: .cancelled, message: "the engine has shut down") }
}
