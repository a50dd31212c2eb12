/// A config file that cannot be used: unreadable, not YAML, an unknown key, a wrong type or an
/// invalid value. ``description`` names the file and the key.
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The file could not be read.
        public static let unreadable = Code("unreadable")
        /// The file is not valid YAML.
        public static let syntax = Code("syntax")
        /// A key the config does not have (often a typo).
        public static let unknownKey = Code("unknownKey")
        /// A value of the wrong type.
        public static let wrongType = Code("wrongType")
        /// A value of the right type but out of range or inconsistent.
        public static let invalidValue = Code("invalidValue")
        /// The code's name.
        public var description: String { name }
    }

    /// What is wrong.
    public var code: Code
    /// The config file.
    public var file: String
    /// The key, dotted for nested keys (`progress[1].max`), when one is at fault.
    public var key: String?
    /// What is wrong, for a person.
    public var message: String

    /// Creates an error.
    public init(code: Code, file: String, key: String? = nil, message: String) {
        self.code = code
        self.file = file
        self.key = key
        self.message = message
    }

    /// `FILE: key 'KEY': MESSAGE`.
    public var description: String {
        if let key { return "\(file): key '\(key)': \(message)" }
        return "\(file): \(message)"
    }
}
