import Foundation
import MacroBase
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The Debug Adapter Protocol's framing on a pair of file descriptors: each message is
/// `Content-Length: N\r\n\r\n` and N bytes of JSON. Reading is for one thread; writing is
/// safe from any thread (one message at a time, with the next `seq`).
final class DapFraming: Sendable {
    private let input: Int32
    private let output: Int32
    private let writer = Mutex<Int>(0)
    private let buffer = Mutex<[UInt8]>([])

    /// Frames on `input` and `output` (stdin and stdout by default).
    init(input: Int32 = 0, output: Int32 = 1) {
        self.input = input
        self.output = output
    }

    /// The next message; nil at end of input. Throws on a malformed header.
    func read() throws -> MacroValue? {
        try buffer.withLock { buffer in
            while true {
                if let end = Self.headerEnd(buffer) {
                    let header = String(decoding: buffer[..<end], as: UTF8.self)
                    var length: Int?
                    for line in header.split(separator: "\r\n") {
                        let parts = line.split(separator: ":", maxSplits: 1)
                        if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-length" {
                            length = Int(parts[1].trimmingCharacters(in: .whitespaces))
                        }
                    }
                    guard let length else { throw DapFramingError(message: "a message without Content-Length: \(header)") }
                    let start = end + 4
                    if buffer.count >= start + length {
                        let body = Array(buffer[start..<(start + length)])
                        buffer.removeSubrange(..<(start + length))
                        return try JSONParser.parse(body, maximumDepth: 256)
                    }
                }
                var chunk = [UInt8](repeating: 0, count: 65536)
                let n = chunk.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw DapFramingError(message: "reading the client's messages failed: \(String(cString: strerror(errno)))")
                }
                if n == 0 { return nil }
                buffer.append(contentsOf: chunk[..<n])
            }
        }
    }

    /// Sends `message` with the next `seq` (added to it).
    func send(_ message: MacroValue) {
        writer.withLock { seq in
            seq += 1
            guard case .object(var fields) = message else { return }
            fields["seq"] = .number(Double(seq))
            let body = Array(MacroValue.object(fields).jsonText(pretty: false).utf8)
            let bytes = Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
                if n < 0 { if errno == EINTR { continue }; return }
                offset += n
            }
        }
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }
}

/// A message the framing cannot read.
struct DapFramingError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
