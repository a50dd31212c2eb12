import Foundation

/// A fresh directory under the system temp dir, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Creates the directory.
    public init(prefix: String = "macroengine-test") {
        let template = NSTemporaryDirectory() + "/\(prefix)-XXXXXX"
        var bytes = Array(template.utf8CString)
        let created = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed")
        path = URL(fileURLWithPath: String(cString: created!)).standardizedFileURL.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// `path/relative`.
    public func url(_ relative: String) -> String { "\(path)/\(relative)" }

    /// Writes a UTF-8 file (creating parent directories) and returns its path.
    @discardableResult
    public func write(_ relative: String, _ contents: String) throws -> String {
        try write(relative, data: Data(contents.utf8))
    }

    /// Writes raw bytes and returns the path.
    @discardableResult
    public func write(_ relative: String, data: Data) throws -> String {
        let full = url(relative)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: full))
        return full
    }

    /// Reads a file as UTF-8.
    public func read(_ relative: String) throws -> String {
        try String(contentsOfFile: url(relative), encoding: .utf8)
    }
}

/// The repository's root (for tests that use the shipped macros and config).
public let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// The demo's random-increment template, as shipped in `macros/random.js`.
public func demoTemplate() throws -> String {
    try String(contentsOfFile: repositoryRoot + "/macros/random.js", encoding: .utf8)
}
