import Foundation

/// Reading macro files: size cap, UTF-8 validation with the position of the first bad byte.
enum SourceFile {
    /// Files larger than this are refused (a macro is a small function).
    static let maximumBytes = 1 << 20

    static func read(_ path: String, macro: String) throws -> String {
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes[.size] as? NSNumber, size.intValue > maximumBytes {
                throw MacroError(
                    code: .io, message: "file is \(size.intValue) bytes; macro files are limited to \(maximumBytes) bytes",
                    macro: macro, file: path)
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as MacroError {
            throw error
        } catch {
            throw MacroError(code: .io, message: "cannot read the file: \(MacroConfig.reason(error))", macro: macro, file: path)
        }
        if let text = String(validating: data, as: UTF8.self) { return text }
        let (line, column) = firstInvalidUTF8(in: data)
        throw MacroError(code: .io, message: "the file is not valid UTF-8", macro: macro, file: path, line: line, column: column)
    }

    /// Line and column (in characters) of the first byte that is not valid UTF-8.
    static func firstInvalidUTF8(in data: Data) -> (Int, Int) {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = data.makeIterator()
        var line = 1, column = 1
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                if encoded.count == 1, encoded.first == UInt8(ascii: "\n") { line += 1; column = 1 } else { column += 1 }
            case .error:
                return (line, column)
            case .emptyInput:
                return (line, column)
            }
        }
    }
}
