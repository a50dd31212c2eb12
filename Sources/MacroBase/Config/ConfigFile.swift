import Logging

/// Coding key for any string, used to find keys the config does not know.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

/// Rejects keys outside `known`, naming the first unknown one (and the nearest known key).
func rejectUnknownKeys(in decoder: any Decoder, known: [String]) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for key in container.allKeys where !known.contains(key.stringValue) {
        let path = (decoder.codingPath + [key]).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        throw ConfigError(
            code: .unknownKey, file: "", key: path,
            message: "unknown key (known keys: \(known.joined(separator: ", ")))")
    }
}

/// The file's shape: every key optional, unknown keys rejected.
struct ConfigFile: Decodable {
    static let keys = [
        "macros_dir", "state_file", "time_limit_ms", "log_level", "allow_eval", "progress",
        "socket", "shutdown_grace_ms", "max_line_bytes", "allowed_uids", "engine_eval", "queue_limit",
        "call_deadline_ms", "fsync", "fsync_interval_ms", "memory_limit_mb", "io_thread",
        "connection_in_flight", "connection_buffer_bytes",
        "harden_builtins", "stall_grace_ms", "stall_quarantine",
        "http", "http_allow_remote", "log_format", "store_limit_bytes",
        "record_runs", "runs_kept", "failed_runs_kept", "runs_bytes",
        "history_versions", "history_bytes", "audit_entries",
    ]
    var macrosDir: String?
    var stateFile: String?
    var timeLimitMs: Int?
    var logLevel: String?
    var allowEval: Bool?
    var progress: [ChannelFile]?
    var socket: String?
    var shutdownGraceMs: Int?
    var maxLineBytes: Int?
    var allowedUIDs: [UInt32]?
    var engineEval: Bool?
    var queueLimit: Int?
    var callDeadlineMs: Int?
    var fsync: String?
    var fsyncIntervalMs: Int?
    var memoryLimitMB: Int?
    var ioThread: String?
    var connectionInFlight: Int?
    var connectionBufferBytes: Int?
    var hardenBuiltins: Bool?
    var stallGraceMs: Int?
    var stallQuarantine: Int?
    var http: String?
    var httpAllowRemote: Bool?
    var logFormat: String?
    var storeLimitBytes: Int?
    var recordRuns: Bool?
    var runsKept: Int?
    var failedRunsKept: Int?
    var runsBytes: Int?
    var historyVersions: Int?
    var historyBytes: Int?
    var auditEntries: Int?

    enum CodingKeys: String, CodingKey {
        case macrosDir = "macros_dir", stateFile = "state_file", timeLimitMs = "time_limit_ms"
        case logLevel = "log_level", allowEval = "allow_eval", progress
        case socket, shutdownGraceMs = "shutdown_grace_ms", maxLineBytes = "max_line_bytes"
        case allowedUIDs = "allowed_uids", engineEval = "engine_eval", queueLimit = "queue_limit"
        case callDeadlineMs = "call_deadline_ms", fsync, fsyncIntervalMs = "fsync_interval_ms"
        case memoryLimitMB = "memory_limit_mb", ioThread = "io_thread"
        case connectionInFlight = "connection_in_flight", connectionBufferBytes = "connection_buffer_bytes"
        case hardenBuiltins = "harden_builtins", stallGraceMs = "stall_grace_ms", stallQuarantine = "stall_quarantine"
        case http, httpAllowRemote = "http_allow_remote", logFormat = "log_format"
        case storeLimitBytes = "store_limit_bytes"
        case recordRuns = "record_runs", runsKept = "runs_kept", failedRunsKept = "failed_runs_kept", runsBytes = "runs_bytes"
        case historyVersions = "history_versions", historyBytes = "history_bytes", auditEntries = "audit_entries"
    }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(in: decoder, known: Self.keys)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        macrosDir = try c.decodeIfPresent(String.self, forKey: .macrosDir)
        stateFile = try c.decodeIfPresent(String.self, forKey: .stateFile)
        timeLimitMs = try c.decodeIfPresent(Int.self, forKey: .timeLimitMs)
        logLevel = try c.decodeIfPresent(String.self, forKey: .logLevel)
        allowEval = try c.decodeIfPresent(Bool.self, forKey: .allowEval)
        progress = try c.decodeIfPresent([ChannelFile].self, forKey: .progress)
        socket = try c.decodeIfPresent(String.self, forKey: .socket)
        shutdownGraceMs = try c.decodeIfPresent(Int.self, forKey: .shutdownGraceMs)
        maxLineBytes = try c.decodeIfPresent(Int.self, forKey: .maxLineBytes)
        allowedUIDs = try c.decodeIfPresent([UInt32].self, forKey: .allowedUIDs)
        engineEval = try c.decodeIfPresent(Bool.self, forKey: .engineEval)
        hardenBuiltins = try c.decodeIfPresent(Bool.self, forKey: .hardenBuiltins)
        stallGraceMs = try c.decodeIfPresent(Int.self, forKey: .stallGraceMs)
        stallQuarantine = try c.decodeIfPresent(Int.self, forKey: .stallQuarantine)
        queueLimit = try c.decodeIfPresent(Int.self, forKey: .queueLimit)
        callDeadlineMs = try c.decodeIfPresent(Int.self, forKey: .callDeadlineMs)
        fsync = try c.decodeIfPresent(String.self, forKey: .fsync)
        fsyncIntervalMs = try c.decodeIfPresent(Int.self, forKey: .fsyncIntervalMs)
        memoryLimitMB = try c.decodeIfPresent(Int.self, forKey: .memoryLimitMB)
        ioThread = try c.decodeIfPresent(String.self, forKey: .ioThread)
        connectionInFlight = try c.decodeIfPresent(Int.self, forKey: .connectionInFlight)
        connectionBufferBytes = try c.decodeIfPresent(Int.self, forKey: .connectionBufferBytes)
        http = try c.decodeIfPresent(String.self, forKey: .http)
        httpAllowRemote = try c.decodeIfPresent(Bool.self, forKey: .httpAllowRemote)
        storeLimitBytes = try c.decodeIfPresent(Int.self, forKey: .storeLimitBytes)
        recordRuns = try c.decodeIfPresent(Bool.self, forKey: .recordRuns)
        runsKept = try c.decodeIfPresent(Int.self, forKey: .runsKept)
        failedRunsKept = try c.decodeIfPresent(Int.self, forKey: .failedRunsKept)
        runsBytes = try c.decodeIfPresent(Int.self, forKey: .runsBytes)
        historyVersions = try c.decodeIfPresent(Int.self, forKey: .historyVersions)
        historyBytes = try c.decodeIfPresent(Int.self, forKey: .historyBytes)
        auditEntries = try c.decodeIfPresent(Int.self, forKey: .auditEntries)
        logFormat = try c.decodeIfPresent(String.self, forKey: .logFormat)
    }

    struct ChannelFile: Decodable {
        static let keys = ["name", "min", "max", "initial"]
        var name: String
        var min: Double?
        var max: Double?
        var initial: Double?

        enum CodingKeys: String, CodingKey { case name, min, max, initial }

        init(from decoder: any Decoder) throws {
            try rejectUnknownKeys(in: decoder, known: Self.keys)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            min = try c.decodeIfPresent(Double.self, forKey: .min)
            max = try c.decodeIfPresent(Double.self, forKey: .max)
            initial = try c.decodeIfPresent(Double.self, forKey: .initial)
        }
    }

    func config(file: String) throws(ConfigError) -> MacroConfig {
        var config = MacroConfig()
        if let macrosDir {
            guard !macrosDir.isEmpty else { throw ConfigError(code: .invalidValue, file: file, key: "macros_dir", message: "must not be empty") }
            config.macrosDirectory = macrosDir
        }
        if let stateFile, !stateFile.isEmpty { config.stateFile = stateFile }
        if let timeLimitMs {
            guard (1...86_400_000).contains(timeLimitMs) else {
                throw ConfigError(code: .invalidValue, file: file, key: "time_limit_ms", message: "must be between 1 and 86400000, got \(timeLimitMs)")
            }
            config.timeLimit = .milliseconds(timeLimitMs)
        }
        if let logLevel {
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ConfigError(
                    code: .invalidValue, file: file, key: "log_level",
                    message: "must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(logLevel)'")
            }
            config.logLevel = level
        }
        if let logFormat {
            guard let format = LogFormat(rawValue: logFormat) else {
                throw ConfigError(code: .invalidValue, file: file, key: "log_format", message: "must be one of text, json, got '\(logFormat)'")
            }
            config.logFormat = format
        }
        if let allowEval { config.allowEval = allowEval }
        if let memoryLimitMB {
            guard (16...1_048_576).contains(memoryLimitMB) else {
                throw ConfigError(code: .invalidValue, file: file, key: "memory_limit_mb", message: "must be between 16 and 1048576, got \(memoryLimitMB)")
            }
            config.memoryLimitMB = memoryLimitMB
        }
        if let fsync {
            guard let policy = FsyncPolicy(rawValue: fsync) else {
                throw ConfigError(code: .invalidValue, file: file, key: "fsync", message: "must be one of always, interval, never, got '\(fsync)'")
            }
            config.fsync = policy
        }
        if let ioThread {
            guard let mode = IOThread(rawValue: ioThread) else {
                throw ConfigError(code: .invalidValue, file: file, key: "io_thread", message: "must be one of separate, engine, got '\(ioThread)'")
            }
            config.ioThread = mode
        }
        if let fsyncIntervalMs {
            guard (1...3_600_000).contains(fsyncIntervalMs) else {
                throw ConfigError(code: .invalidValue, file: file, key: "fsync_interval_ms", message: "must be between 1 and 3600000, got \(fsyncIntervalMs)")
            }
            config.fsyncInterval = .milliseconds(fsyncIntervalMs)
        }
        if let callDeadlineMs {
            guard (1...86_400_000).contains(callDeadlineMs) else {
                throw ConfigError(code: .invalidValue, file: file, key: "call_deadline_ms", message: "must be between 1 and 86400000, got \(callDeadlineMs)")
            }
            config.callDeadline = .milliseconds(callDeadlineMs)
        }
        if let socket, !socket.isEmpty { config.socket = socket }
        if let shutdownGraceMs {
            guard (0...3_600_000).contains(shutdownGraceMs) else {
                throw ConfigError(code: .invalidValue, file: file, key: "shutdown_grace_ms", message: "must be between 0 and 3600000, got \(shutdownGraceMs)")
            }
            config.shutdownGrace = .milliseconds(shutdownGraceMs)
        }
        if let connectionInFlight {
            guard (1...65_536).contains(connectionInFlight) else {
                throw ConfigError(code: .invalidValue, file: file, key: "connection_in_flight", message: "must be between 1 and 65536, got \(connectionInFlight)")
            }
            config.connectionInFlight = connectionInFlight
        }
        if let connectionBufferBytes {
            guard ((64 << 10)...(1 << 30)).contains(connectionBufferBytes) else {
                throw ConfigError(code: .invalidValue, file: file, key: "connection_buffer_bytes", message: "must be between 65536 and 1073741824, got \(connectionBufferBytes)")
            }
            config.connectionBufferBytes = connectionBufferBytes
        }
        if let maxLineBytes {
            guard (1024...(256 << 20)).contains(maxLineBytes) else {
                throw ConfigError(code: .invalidValue, file: file, key: "max_line_bytes", message: "must be between 1024 and 268435456, got \(maxLineBytes)")
            }
            config.maxLineBytes = maxLineBytes
        }
        if let allowedUIDs { config.allowedUIDs = allowedUIDs }
        if let hardenBuiltins { config.hardenBuiltins = hardenBuiltins }
        if let stallGraceMs {
            guard (0...600_000).contains(stallGraceMs) else {
                throw ConfigError(code: .invalidValue, file: file, key: "stall_grace_ms", message: "must be between 0 and 600000, got \(stallGraceMs)")
            }
            config.stallGrace = .milliseconds(stallGraceMs)
        }
        if let historyVersions {
            guard (1...100_000).contains(historyVersions) else {
                throw ConfigError(code: .invalidValue, file: file, key: "history_versions", message: "must be between 1 and 100000, got \(historyVersions)")
            }
            config.historyVersions = historyVersions
        }
        if let historyBytes {
            guard (65536...(1 << 40)).contains(historyBytes) else {
                throw ConfigError(code: .invalidValue, file: file, key: "history_bytes", message: "must be between 65536 and 1099511627776, got \(historyBytes)")
            }
            config.historyBytes = historyBytes
        }
        if let auditEntries {
            guard (10...100_000).contains(auditEntries) else {
                throw ConfigError(code: .invalidValue, file: file, key: "audit_entries", message: "must be between 10 and 100000, got \(auditEntries)")
            }
            config.auditEntries = auditEntries
        }
        if let stallQuarantine {
            guard (1...100).contains(stallQuarantine) else {
                throw ConfigError(code: .invalidValue, file: file, key: "stall_quarantine", message: "must be between 1 and 100, got \(stallQuarantine)")
            }
            config.stallQuarantine = stallQuarantine
        }
        if let http, !http.isEmpty {
            guard let address = HTTPAddress(parsing: http) else {
                throw ConfigError(code: .invalidValue, file: file, key: "http", message: "must be HOST:PORT such as 127.0.0.1:8080 (port 0 picks a free one), got '\(http)'")
            }
            config.http = address
        }
        if let httpAllowRemote { config.httpAllowRemote = httpAllowRemote }
        if let storeLimitBytes {
            guard (1024...1_073_741_824).contains(storeLimitBytes) else {
                throw ConfigError(code: .invalidValue, file: file, key: "store_limit_bytes", message: "must be between 1024 and 1073741824, got \(storeLimitBytes)")
            }
            config.storeLimitBytes = storeLimitBytes
        }
        if let recordRuns { config.recordRuns = recordRuns }
        for (key, value, range) in [("runs_kept", runsKept, 0...100_000), ("failed_runs_kept", failedRunsKept, 0...100_000), ("runs_bytes", runsBytes, 65536...4_294_967_296)] {
            guard let value else { continue }
            guard range.contains(value) else {
                throw ConfigError(code: .invalidValue, file: file, key: key, message: "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            }
            switch key {
            case "runs_kept": config.runsKept = value
            case "failed_runs_kept": config.failedRunsKept = value
            default: config.runsBytes = value
            }
        }
        if let engineEval { config.engineEval = engineEval }
        if let queueLimit {
            guard (1...1_000_000).contains(queueLimit) else {
                throw ConfigError(code: .invalidValue, file: file, key: "queue_limit", message: "must be between 1 and 1000000, got \(queueLimit)")
            }
            config.queueLimit = queueLimit
        }
        if let progress {
            guard !progress.isEmpty else { throw ConfigError(code: .invalidValue, file: file, key: "progress", message: "must list at least one channel") }
            var channels: [ProgressChannel] = []
            for (index, raw) in progress.enumerated() {
                let key = "progress[\(index)]"
                guard MacroName.isIdentifier(raw.name) else {
                    throw ConfigError(code: .invalidValue, file: file, key: "\(key).name", message: "'\(raw.name)' is not an identifier")
                }
                guard !channels.contains(where: { $0.name == raw.name }) else {
                    throw ConfigError(code: .invalidValue, file: file, key: "\(key).name", message: "channel '\(raw.name)' is listed twice")
                }
                let channel = ProgressChannel(name: raw.name, minimum: raw.min ?? 0, maximum: raw.max ?? 10, initial: raw.initial ?? raw.min ?? 0)
                guard channel.minimum.isFinite, channel.maximum.isFinite, channel.minimum < channel.maximum else {
                    throw ConfigError(code: .invalidValue, file: file, key: key, message: "min must be less than max (got \(channel.minimum)...\(channel.maximum))")
                }
                guard channel.initial.isFinite, (channel.minimum...channel.maximum).contains(channel.initial) else {
                    throw ConfigError(code: .invalidValue, file: file, key: "\(key).initial", message: "must be within min...max")
                }
                channels.append(channel)
            }
            config.channels = channels
        }
        return config
    }
}
