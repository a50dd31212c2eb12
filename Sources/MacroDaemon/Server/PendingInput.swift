import NIOCore
import Synchronization

/// The bytes of a connection that were read but do not make a whole line yet. The line decoder
/// keeps it current after each read; an engine restart hands them to the next process with the
/// socket, so a request cut in two by the restart is not lost.
final class PendingInput: Sendable {
    private let bytes = Mutex<ByteBuffer?>(nil)

    /// Records what is left after a read (nil or empty: nothing).
    func set(_ buffer: ByteBuffer?) {
        bytes.locked { $0 = (buffer?.readableBytes ?? 0) > 0 ? buffer : nil }
    }

    /// What is left now.
    var current: [UInt8] { bytes.locked { $0.map { Array($0.readableBytesView) } ?? [] } }
}
