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
    static let keys = ["macros_dir", "state_file", "time_limit_ms", "log_level", "allow_eval", "progress"]
    var macrosDir: String?
    var stateFile: String?
    var timeLimitMs: Int?
    var logLevel: String?
    var allowEval: Bool?
    var progress: [ChannelFile]?

    enum CodingKeys: String, CodingKey {
        case macrosDir = "macros_dir", stateFile = "state_file", timeLimitMs = "time_limit_ms"
        case logLevel = "log_level", allowEval = "allow_eval", progress
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
        if let allowEval { config.allowEval = allowEval }
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
