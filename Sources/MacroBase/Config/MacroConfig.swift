import Foundation
import Logging
import Yams

/// When state writes are made durable with fsync.
public enum FsyncPolicy: String, Sendable, Equatable, CaseIterable {
    /// fsync before each reply that changed the state.
    case always
    /// fsync at most once per interval, when something changed.
    case interval
    /// never fsync (written before the reply: safe against a process crash, not a power loss).
    case never
}

/// Which thread macrod serves its connections on.
public enum IOThread: String, Sendable, Equatable, CaseIterable {
    /// Connections on a thread of their own, which hands each read's requests to the engine's
    /// thread and the replies back (three wake-ups per call).
    case separate
    /// Connections on the engine's own thread, like Redis (one wake-up per call; the default):
    /// while JavaScript keeps that thread busy past 20 ms, a control thread takes the
    /// connections over and answers `macro.running`, `macro.cancel` and `progress.get` at once.
    case engine
}

/// The engine's settings, read from a commented YAML file (see `config/macroengine.yaml`).
/// Relative paths in the file are relative to the file's own directory.
public struct MacroConfig: Sendable, Equatable {
    /// The directory of macro files (`macros_dir`).
    public var macrosDirectory: String
    /// The state file (`state_file`); nil means `$XDG_STATE_HOME/macroengine/state.json`.
    public var stateFile: String?
    /// The time limit of each evaluation or call (`time_limit_ms`, default 5000).
    public var timeLimit: Duration
    /// A macro is stopped once the engine's JS memory passes this (`memory_limit_mb`, 512).
    public var memoryLimitMB: Int = 512
    /// The deadline of a whole macro call, awaited time included (`call_deadline_ms`, default 30000).
    public var callDeadline: Duration = .seconds(30)
    /// The log level (`log_level`, default `info`).
    public var logLevel: Logger.Level
    /// Whether macros may use `eval` / `new Function` (`allow_eval`, default false).
    public var allowEval: Bool
    /// The progress channels (`progress`); the default is inner, middle, outer, each 0...10.
    public var channels: [ProgressChannel]
    /// When macrod's state writes reach the disk (`fsync`): each change is appended to the state
    /// journal before the reply; `always` fsyncs it before the reply, `interval` fsyncs at most
    /// every ``fsyncInterval`` (default; a crash of the process loses nothing, a power loss at
    /// most that long), `never` leaves it to the kernel.
    public var fsync: FsyncPolicy = .interval
    /// Requests of one connection that may be unanswered before macrod stops reading from it
    /// (`connection_in_flight`, 64).
    public var connectionInFlight: Int = 64
    /// Replies and notifications that may wait to be written to one connection before macrod
    /// stops reading from it, or drops it when it is only subscribed (`connection_buffer_bytes`, 1 MiB).
    public var connectionBufferBytes: Int = 1 << 20
    /// How macrod's log is written on stderr (`log_format`, default `text`).
    public var logFormat: LogFormat = .text
    /// Which thread serves macrod's connections (`io_thread`, default `engine`).
    public var ioThread: IOThread = .engine
    /// The `interval` policy's period (`fsync_interval_ms`, default 1000).
    public var fsyncInterval: Duration = .seconds(1)
    /// macrod's socket (`socket`); nil means the default (see README).
    public var socket: String?
    /// How long macrod lets calls in flight finish after SIGTERM (`shutdown_grace_ms`, 5000).
    public var shutdownGrace: Duration = .seconds(5)
    /// The longest request line macrod accepts (`max_line_bytes`, 1 MiB).
    public var maxLineBytes: Int = 1 << 20
    /// Other users allowed to connect besides the daemon's own (`allowed_uids`, none).
    public var allowedUIDs: [UInt32] = []
    /// Whether macrod answers `engine.eval` (`engine_eval`, false: a development switch).
    public var engineEval: Bool = false
    /// How many requests may wait for the engine before macrod answers -32005 busy (`queue_limit`, 1024).
    public var queueLimit: Int = 1024
    /// Freeze JavaScript's built-ins before any macro runs (`harden_builtins`, default true).
    public var hardenBuiltins: Bool = true
    /// How long past its budget (or past a cancel) the engine may stay inside JavaScript before
    /// the last resort takes over: macrod restarts its engine, the CLI stops (`stall_grace_ms`, 2000).
    public var stallGrace: Duration = .seconds(2)
    /// How many stalls of one macro's (or lib file's) code within 60 s put it in quarantine: its
    /// calls are then refused at once until its file changes or `macro unquarantine` lifts it
    /// (`stall_quarantine`, 2; 1 quarantines at the first stall).
    public var stallQuarantine = 2
    /// Where macrod serves the dashboard (`http`, `HOST:PORT`); nil: no dashboard.
    public var http: HTTPAddress?
    /// Whether the dashboard may listen on an address other than loopback (`http_allow_remote`, false).
    public var httpAllowRemote: Bool = false
    /// The most one macro's `store` may hold: the UTF-8 bytes of its keys and of their values'
    /// JSON text (`store_limit_bytes`, 1 MiB).
    public var storeLimitBytes: Int = 1 << 20
    /// Whether every run is recorded (`record_runs`, true).
    public var recordRuns = true
    /// Successful runs kept per macro (`runs_kept`, 50).
    public var runsKept = 50
    /// Failed runs kept per macro (`failed_runs_kept`, 200): failures outlive successes.
    public var failedRunsKept = 200
    /// All run records together, in bytes (`runs_bytes`, 16 MiB): past it the oldest success goes first.
    public var runsBytes = 16 << 20
    /// Versions of each macro and lib file the history keeps, the newest (`history_versions`, 100).
    public var historyVersions = 100
    /// Bytes the history's kept contents may take in all before the oldest versions go, never a
    /// file's newest (`history_bytes`, 32 MiB).
    public var historyBytes = 32 << 20
    /// Events the audit log keeps (`audit_entries`, 10000).
    public var auditEntries = 10_000

    /// The built-in defaults: `./macros`, the three rings (inner, middle, outer), 5 s, `info`.
    public init(
        macrosDirectory: String = "macros", stateFile: String? = nil, timeLimit: Duration = .seconds(5),
        logLevel: Logger.Level = .info, allowEval: Bool = false, channels: [ProgressChannel] = ProgressChannel.rings
    ) {
        self.macrosDirectory = macrosDirectory
        self.stateFile = stateFile
        self.timeLimit = timeLimit
        self.logLevel = logLevel
        self.allowEval = allowEval
        self.channels = channels
    }

    /// The state file to use: the configured one, else `$XDG_STATE_HOME/macroengine/state.json`
    /// (`~/.local/state/...` when XDG_STATE_HOME is unset).
    public var resolvedStateFile: String {
        if let stateFile { return stateFile }
        let env = ProcessInfo.processInfo.environment
        let base =
            env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((env["HOME"] ?? NSHomeDirectory()) + "/.local/state")
        return base + "/macroengine/state.json"
    }

    /// The config file to read: `explicit` (a `--config` flag), else `$MACROENGINE_CONFIG`, else
    /// the user's `$XDG_CONFIG_HOME/macroengine/macroengine.yaml` (`~/.config/...`, where
    /// `make install-user` puts it) when that file exists, else nil (the built-in defaults).
    public static func filePath(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["MACROENGINE_CONFIG"], !fromEnvironment.isEmpty { return fromEnvironment }
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.config")
        let user = base + "/macroengine/macroengine.yaml"
        return FileManager.default.fileExists(atPath: user) ? user : nil
    }

    /// Reads and validates a config file.
    public static func load(file: String) throws(ConfigError) -> MacroConfig {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigError(code: .unreadable, file: file, message: "cannot read the file (\(Self.reason(error)))")
        }
        return try parse(text, file: file)
    }

    /// Parses config text; `file` names it in errors and anchors relative paths.
    public static func parse(_ text: String, file: String) throws(ConfigError) -> MacroConfig {
        let base = URL(fileURLWithPath: file).deletingLastPathComponent().path
        let raw: ConfigFile
        do {
            guard let node = try Yams.compose(yaml: text), node.null == nil else {
                return MacroConfig().resolvingPaths(relativeTo: base)
            }
            raw = try YAMLDecoder().decode(ConfigFile.self, from: node)
        } catch let error as ConfigError {
            throw ConfigError(code: error.code, file: file, key: error.key, message: error.message)
        } catch let error as DecodingError {
            throw Self.configError(error, file: file)
        } catch let error as YamlError {
            throw ConfigError(code: .syntax, file: file, message: "not valid YAML: \(error)")
        } catch {
            throw ConfigError(code: .syntax, file: file, message: "\(error)")
        }
        return try raw.config(file: file).resolvingPaths(relativeTo: base)
    }

    private func resolvingPaths(relativeTo base: String) -> MacroConfig {
        var copy = self
        copy.macrosDirectory = Self.resolve(macrosDirectory, base: base)
        copy.stateFile = stateFile.map { Self.resolve($0, base: base) }
        copy.socket = socket.map { Self.resolve($0, base: base) }
        return copy
    }

    static func resolve(_ path: String, base: String) -> String {
        if path.hasPrefix("/") { return path }
        if path.hasPrefix("~/") { return NSHomeDirectory() + path.dropFirst() }
        return URL(fileURLWithPath: base).appendingPathComponent(path).standardizedFileURL.path
    }

    private static func configError(_ error: DecodingError, file: String) -> ConfigError {
        func keyPath(_ path: [any CodingKey]) -> String? {
            var out = ""
            for key in path {
                if let index = key.intValue { out += "[\(index)]" } else { out += (out.isEmpty ? "" : ".") + key.stringValue }
            }
            return out.isEmpty ? nil : out
        }
        switch error {
        case .typeMismatch(let type, let context):
            return ConfigError(code: .wrongType, file: file, key: keyPath(context.codingPath), message: "expected \(Self.typeName(type))")
        case .valueNotFound(let type, let context):
            return ConfigError(code: .wrongType, file: file, key: keyPath(context.codingPath), message: "expected \(Self.typeName(type)), found nothing")
        case .keyNotFound(let key, let context):
            return ConfigError(code: .invalidValue, file: file, key: keyPath(context.codingPath + [key]), message: "is required")
        case .dataCorrupted(let context):
            return ConfigError(code: .wrongType, file: file, key: keyPath(context.codingPath), message: context.debugDescription)
        @unknown default:
            return ConfigError(code: .wrongType, file: file, message: "\(error)")
        }
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: return "an integer"
        case is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        case is String.Type: return "a string"
        default:
            let name = "\(type)"
            if name.hasPrefix("Array") || name.contains("Sequence") || name.contains("Unkeyed") { return "a list" }
            return name.contains("Dictionary") || name.contains("Keyed") ? "a mapping" : "a \(name)"
        }
    }

    /// What the system said about a failed file operation, in words (`no such file`, strerror).
    package static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        if ns.domain == NSCocoaErrorDomain {
            // Foundation's texts ("NSCocoaErrorDomain error 256", "You don't have permission"
            // for a FIFO) say less than a plain sentence.
            switch ns.code {
            case NSFileReadNoSuchFileError, NSFileNoSuchFileError: return "no such file"
            case NSFileReadNoPermissionError, NSFileWriteNoPermissionError: return "permission denied (or not a regular file)"
            case NSFileWriteOutOfSpaceError: return "no space left on the device"
            case NSFileWriteVolumeReadOnlyError: return "read-only file system"
            case NSFileReadInvalidFileNameError, NSFileWriteInvalidFileNameError: return "invalid file name"
            case NSFileReadInapplicableStringEncodingError, NSFileReadCorruptFileError: return "not readable as text (not UTF-8?)"
            case NSFileReadTooLargeError: return "the file is too large"
            case NSFileWriteFileExistsError: return "the file exists"
            case NSFileReadUnknownError, NSFileReadUnknownStringEncodingError: return "the file could not be read (not a regular file?)"
            case NSFileWriteUnknownError: return "the file could not be written"
            default: break
            }
        }
        return ns.localizedDescription
    }
}
