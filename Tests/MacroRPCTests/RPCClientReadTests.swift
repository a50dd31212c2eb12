import Foundation
import MacroRPC
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The client's line reader: lines of any length, split across reads any way, each returned
/// whole and in order.
@Suite("RPCClient reading lines")
struct RPCClientReadTests {
    /// A listening Unix socket at `path`; returns its descriptor.
    private static func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        try #require(bound == 0)
        try #require(Glibc.listen(fd, 1) == 0)
        return fd
    }

    @Test func longAndShortLinesInAnyChunksComeBackWholeAndInOrder() throws {
        let path = "/tmp/rpcread-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let listener = try Self.listen(at: path)
        defer { close(listener) }
        let client = try RPCClient(path: path)
        let peer = accept(listener, nil, nil)
        defer { close(peer) }
        // A 3 MiB line, then 2,000 short ones, then one with no newline before the end.
        let long = String(repeating: "ab", count: 3 << 19)
        var text = long + "\n"
        for n in 0..<2000 { text += "line \(n)\n" }
        text += "last"
        let bytes = Array(text.utf8)
        let writer = Thread {
            var offset = 0
            var size = 1
            while offset < bytes.count {
                // Chunks of 1 byte to 256 KiB, so lines split anywhere.
                let count = min(size, bytes.count - offset)
                let written = bytes[offset..<(offset + count)].withUnsafeBytes { write(peer, $0.baseAddress, count) }
                if written <= 0 { break }
                offset += written
                size = size >= 1 << 18 ? 1 : size * 3
            }
            shutdown(peer, Int32(SHUT_WR))
        }
        writer.start()
        #expect(try client.readLine() == long)
        for n in 0..<2000 { #expect(try client.readLine() == "line \(n)") }
        #expect(try client.readLine() == "last")
        #expect(try client.readLine() == nil)
    }
}
