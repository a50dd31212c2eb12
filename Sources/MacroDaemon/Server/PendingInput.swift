import NIOCore
import Synchronization

/// The bytes of a connection that were read but do not make a whole line yet. The line decoder
/// keeps it current after each read; an engine restart hands them to the next process with the
/// socket, so a request cut in two by the restart is not lost.
///
/// It is also the connection handler's brake on the decoder: while ``isPaused``, the decoder cuts
/// no more lines from what it has read (one read can bring thousands of small requests), so a
/// connection never has more than its in-flight bound of requests admitted.
final class PendingInput: Sendable {
    private let bytes = Mutex<ByteBuffer?>(nil)
    private let paused = Atomic<Bool>(false)

    /// True while the decoder must keep what it read undecoded.
    var isPaused: Bool { paused.load(ordering: .relaxed) }

    /// Stops (true) or resumes (false) the decoding of lines already read.
    func pause(_ value: Bool) { paused.store(value, ordering: .relaxed) }

    /// Records what is left after a read (nil or empty: nothing).
    func set(_ buffer: ByteBuffer?) {
        bytes.locked { $0 = (buffer?.readableBytes ?? 0) > 0 ? buffer : nil }
    }

    /// True when what is left ends inside a line (the next bytes read continue it).
    var endsInsideALine: Bool {
        bytes.locked { buffer in
            guard let buffer, buffer.readableBytes > 0 else { return false }
            return buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self) != UInt8(ascii: "\n")
        }
    }

    /// What is left now.
    var current: [UInt8] { bytes.locked { $0.map { Array($0.readableBytesView) } ?? [] } }
}
