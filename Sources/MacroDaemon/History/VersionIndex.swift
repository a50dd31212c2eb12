import Foundation
import Logging
import MacroBase
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// The version history's index on disk: one JSON file per macro or lib file in
/// `STATE.history/index/` (`bump.json`; `lib.rings.json` for `lib/rings`: a dot is in no
/// identifier; `long.SHA256.json` for a name past 195 bytes), `{"format": 1, "name": NAME, "versions": [{n, hash, bytes, time, who}]}`, oldest
/// first. Written atomically; read without following symlinks. A file that cannot be understood is
/// moved aside (`NAME.json.corrupt-DATE`, kept) with a warning, and only that file's history
/// starts again; an entry that cannot be understood, or whose object is missing, is dropped with a
/// warning.
enum VersionIndex {
    /// The index file name of entry `name`; for a name too long for a file name with room for
    /// the atomic write's temporary name (a lib file's may be 252 bytes), `long.SHA256.json`
    /// (no macro or lib file maps to `long.*.json`).
    static func fileName(of name: String) -> String {
        let plain = name.replacingOccurrences(of: "/", with: ".") + ".json"
        return plain.utf8.count <= 200 ? plain : "long.\(SHA256.hex(Array(name.utf8))).json"
    }

    /// Writes `versions` as the index of `name` in `directory` (none: its file is removed).
    static func write(_ versions: [StoredVersion], of name: String, in directory: String, logger: Logger) {
        let path = "\(directory)/\(fileName(of: name))"
        guard !versions.isEmpty else {
            unlink(path)
            return
        }
        let index: MacroValue = ["format": 1, "name": .string(name), "versions": .array(versions.map(entry))]
        do {
            try AtomicFile.write(Data(index.jsonText(pretty: false).utf8), to: path, mode: 0o600, durable: false)
        } catch {
            logger.warning("version history: cannot write \(path): \(error)")
        }
    }

    private static func entry(_ version: StoredVersion) -> MacroValue {
        var entry = OrderedFields()
        entry["n"] = .number(Double(version.number))
        entry["hash"] = .string(version.hash)
        entry["bytes"] = .number(Double(version.bytes))
        entry["time"] = .number(version.time)
        entry["who"] = .string(version.who)
        return .object(entry)
    }

    /// The versions of every file indexed in `directory` whose objects are in `objects`.
    static func load(from directory: String, objects: String, logger: Logger) -> [String: [StoredVersion]] {
        switch PlainFile.kind(directory) {
        case .missing: return [:]
        case .regular, .other:
            logger.warning("version history: \(directory) is not a directory (a symlink or a file is not followed); the history starts empty")
            return [:]
        case .directory: break
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasPrefix(".") && $0.hasSuffix(".json") }
        var files: [String: [StoredVersion]] = [:]
        for file in names.sorted() {
            if let (name, versions) = read("\(directory)/\(file)", objects: objects, logger: logger) { files[name] = versions }
        }
        return files
    }

    /// One index file: its entry name and versions; nil (with a warning) when it is not one.
    private static func read(_ path: String, objects: String, logger: Logger) -> (String, [StoredVersion])? {
        guard PlainFile.kind(path) == .regular else {
            logger.warning("version history: \(path) is not a regular file; it is left alone")
            return nil
        }
        let parsed: MacroValue
        do {
            parsed = try JSONParser.parse(try PlainFile.read(path))
        } catch {
            let kept = PlainFile.moveAside(path)
            logger.warning("version history: \(path) is not a history index (\(error)); kept as \(kept ?? path), this file's history starts again")
            return nil
        }
        guard parsed["format"] == 1, let name = parsed["name"].stringValue, fileName(of: name) == (path as NSString).lastPathComponent,
            let list = parsed["versions"].arrayValue
        else {
            let kept = PlainFile.moveAside(path)
            logger.warning("version history: \(path) is not a history index of format 1; kept as \(kept ?? path), this file's history starts again")
            return nil
        }
        var versions: [StoredVersion] = []
        var skipped = 0, missing = 0
        for item in list {
            // A number past 2^53 is not one macrod gave (counting on from it would overflow).
            guard let number = item["n"].intValue, number >= 1, number <= 1 << 53, let hash = item["hash"].stringValue, hash.count == 64, hash.allSatisfy(\.isHexDigit),
                let bytes = item["bytes"].intValue, case .number(let time) = item["time"], number > (versions.last?.number ?? 0)
            else {
                skipped += 1
                continue
            }
            guard PlainFile.kind("\(objects)/\(hash)") == .regular else {
                missing += 1
                continue
            }
            versions.append(StoredVersion(number: number, hash: hash, bytes: bytes, time: time, who: item["who"].stringValue ?? ""))
        }
        if skipped > 0 { logger.warning("version history: \(path): \(skipped) entr\(skipped == 1 ? "y" : "ies") could not be understood and were skipped") }
        if missing > 0 { logger.warning("version history: \(path): \(missing) version(s) whose content is missing from \(objects) were dropped") }
        return versions.isEmpty ? nil : (name, versions)
    }
}
