import MacroBase
import MacroRPC
import NIOCore

/// The JSON writer's sink for a `ByteBuffer`. The writer's many small pieces (a quote, a colon,
/// a number's digits) are gathered in a chunk of the stack and go into the buffer in one
/// `writeBytes` per chunk: each `ByteBuffer` write pays a uniqueness check and an exclusivity
/// check on its storage, which per byte cost more than the bytes themselves.
struct ByteBufferJSONSink: JSONByteSink {
    /// The caller's buffer, for the length of one ``RPCMessage/encode(into:)``.
    let target: UnsafeMutablePointer<ByteBuffer>
    /// The staging chunk (stack memory of ``RPCMessage/encode(into:)``).
    let chunk: UnsafeMutableRawBufferPointer
    /// Bytes staged in `chunk`.
    var staged = 0

    /// A sink writing to `target` through `chunk`.
    init(target: UnsafeMutablePointer<ByteBuffer>, chunk: UnsafeMutableRawBufferPointer) {
        self.target = target
        self.chunk = chunk
    }

    /// Stages one byte.
    mutating func writeJSONByte(_ byte: UInt8) {
        if staged == chunk.count { flush() }
        chunk[staged] = byte
        staged += 1
    }

    /// Stages `bytes`, or writes them straight to the buffer when they are longer than the chunk.
    mutating func writeJSONBytes(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if bytes.count > chunk.count - staged {
            flush()
            // Longer than the chunk (a long string): straight into the buffer.
            if bytes.count > chunk.count {
                target.pointee.writeBytes(bytes)
                return
            }
        }
        (chunk.baseAddress! + staged).copyMemory(from: source, byteCount: bytes.count)
        staged += bytes.count
    }

    /// Moves the staged bytes into the buffer.
    mutating func flush() {
        guard staged > 0 else { return }
        target.pointee.writeBytes(UnsafeRawBufferPointer(rebasing: chunk[..<staged]))
        staged = 0
    }
}

extension RPCMessage {
    /// Appends the message's JSON text to `buffer` (no newline: a WebSocket text frame).
    package func encode(into buffer: inout ByteBuffer) {
        encode(into: &buffer, newline: false)
    }

    /// Appends the message as one line of the socket protocol: its JSON text and `\n`.
    package func encodeLine(into buffer: inout ByteBuffer) {
        encode(into: &buffer, newline: true)
    }

    private func encode(into buffer: inout ByteBuffer, newline: Bool) {
        withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { chunk in
            withUnsafeMutablePointer(to: &buffer) { target in
                var sink = ByteBufferJSONSink(target: target, chunk: chunk)
                writeJSON(to: &sink)
                if newline { sink.writeJSONByte(UInt8(ascii: "\n")) }
                sink.flush()
            }
        }
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
