import Foundation
import MacroBase

/// `--state FILE`: the export mark kept across restarts of macro-otel, so a new macro-otel
/// exports only the runs after the last one exported: `{"lastRunId": N, "lastRunEnded": "ISO 8601"}`,
/// replaced atomically (written beside it, then renamed).
public struct StateFile: Sendable {
    /// The file's path.
    public var path: String

    /// The state file at `path`.
    public init(path: String) {
        self.path = path
    }

    /// The mark it holds; nil when there is no file yet.
    public func load() throws(ExportError) -> ExportMark? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ExportError(.stateFile, "cannot read the state file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let json = try? MacroValue(jsonText: text), let id = json["lastRunId"].intValue, id >= 0,
            let ended = json["lastRunEnded"].stringValue.flatMap(Timestamp.parse)
        else {
            throw ExportError(
                .stateFile, "the state file \(path) is not {\"lastRunId\": N, \"lastRunEnded\": \"ISO 8601\"}: \(text.prefix(120)); remove it to export every kept run again")
        }
        return ExportMark(id: id, ended: ended)
    }

    /// Replaces the file with `mark`.
    public func save(_ mark: ExportMark) throws(ExportError) {
        let text = "{\"lastRunId\":\(mark.id),\"lastRunEnded\":\"\(Timestamp.format(mark.ended, digits: 9))\"}\n"
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ExportError(.stateFile, "cannot write the state file \(temporary): \(String(cString: strerror(errno)))")
        }
        guard rename(temporary, path) == 0 else {
            throw ExportError(.stateFile, "cannot replace the state file \(path): \(String(cString: strerror(errno)))")
        }
    }
}
