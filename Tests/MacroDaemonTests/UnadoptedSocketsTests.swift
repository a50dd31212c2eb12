import Glibc
import MacroTestSupport
import Testing

@testable import MacroDaemon

/// The restart's search for connections no handler has seen: every socket of the process
/// accepted on the listener whose cookie nobody claimed, and nothing else (the listener itself,
/// sockets of another listener, the claimed ones, descriptors that are not sockets).
@Suite("Unadopted sockets")
struct UnadoptedSocketsTests {
    /// `body` with the Unix socket address of `path`.
    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A listening Unix socket at `path`.
    static func listen(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        let bound = Self.withAddress(path) { bind(fd, $0, $1) }
        try #require(bound == 0)
        try #require(Glibc.listen(fd, 8) == 0)
        return fd
    }

    /// A client connected to `path` and the descriptor `listener` accepted for it.
    static func connectAndAccept(_ path: String, _ listener: Int32) throws -> (client: Int32, accepted: Int32) {
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = Self.withAddress(path) { connect(client, $0, $1) }
        try #require(connected == 0)
        let accepted = accept(listener, nil, nil)
        try #require(accepted >= 0)
        return (client, accepted)
    }

    @Test func onlyTheListenersUnclaimedAcceptedSocketsAreFound() throws {
        let directory = TemporaryDirectory(prefix: "unadopted")
        let ours = directory.url("macrod.sock"), other = directory.url("other.sock")
        let listener = try Self.listen(ours), otherListener = try Self.listen(other)
        let first = try Self.connectAndAccept(ours, listener)
        let second = try Self.connectAndAccept(ours, listener)
        let claimed = try Self.connectAndAccept(ours, listener)
        let elsewhere = try Self.connectAndAccept(other, otherListener)
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        defer {
            for fd in [listener, otherListener, first.client, first.accepted, second.client, second.accepted, claimed.client, claimed.accepted]
                + [elsewhere.client, elsewhere.accepted] + pipeEnds
            {
                close(fd)
            }
        }
        let descriptors = SocketCookie.descriptorsByCookie()
        let claimedCookie = try #require(SocketCookie.of(claimed.accepted))
        let found = SocketCookie.unadopted(descriptors, listener: listener, known: [claimedCookie])
        #expect(found.map(\.fd) == [first.accepted, second.accepted].sorted())
        #expect(found.map(\.cookie) == found.map { SocketCookie.of($0.fd) ?? 0 })
        #expect(SocketCookie.boundPath(listener) == ours)
        #expect(SocketCookie.boundPath(first.client) == nil)
        #expect(SocketCookie.isListening(listener))
        #expect(!SocketCookie.isListening(first.accepted))
        withExtendedLifetime(directory) {}
    }
}
