import MacroBase
import MacroRPC
import NIOCore

/// The JSON writer's sink for a `ByteBuffer`: the bytes go straight into the buffer that is
/// written to the channel. It points at the caller's buffer for the length of one write (see
/// ``RPCMessage/encode(into:)``), so the buffer stays uniquely referenced and grows in place.
struct ByteBufferJSONSink: JSONByteSink {
    let buffer: UnsafeMutablePointer<ByteBuffer>

    init(_ buffer: UnsafeMutablePointer<ByteBuffer>) { self.buffer = buffer }

    mutating func writeJSONByte(_ byte: UInt8) { buffer.pointee.writeInteger(byte) }

    mutating func writeJSONBytes(_ bytes: UnsafeRawBufferPointer) { buffer.pointee.writeBytes(bytes) }
}

extension RPCMessage {
    /// Appends the message's JSON text to `buffer` (no newline: a WebSocket text frame).
    package func encode(into buffer: inout ByteBuffer) {
        withUnsafeMutablePointer(to: &buffer) { pointer in
            var sink = ByteBufferJSONSink(pointer)
            writeJSON(to: &sink)
        }
    }

    /// Appends the message as one line of the socket protocol: its JSON text and `\n`.
    package func encodeLine(into buffer: inout ByteBuffer) {
        encode(into: &buffer)
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    /// The message as one line of the socket protocol, in a new buffer from `allocator`.
    package func line(allocator: ByteBufferAllocator) -> ByteBuffer {
        // Most replies fit; a larger one grows the buffer in place.
        var buffer = allocator.buffer(capacity: 256)
        encodeLine(into: &buffer)
        return buffer
    }
}

extension RPCCodec {
    /// ``RPCCodec/parse(_:)-([UInt8])`` on a line where the line decoder left it (a slice of the
    /// read buffer): the parser reads the buffer's bytes in place.
    package static func parse(_ line: ByteBuffer) -> RPCLine {
        line.withUnsafeReadableBytes { parse($0) }
    }

    /// ``RPCCodec/isBlank(_:)-([UInt8])`` on a line in a buffer.
    package static func isBlank(_ line: ByteBuffer) -> Bool {
        line.withUnsafeReadableBytes { isBlank($0) }
    }
}
