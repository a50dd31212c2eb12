import NIOCore

/// A line of the protocol, or the news that a line was longer than allowed.
package enum LineEvent: Sendable {
    /// A line without its `\n` (and the `\r` before it): a slice of the read buffer, not a copy.
    case line(ByteBuffer)
    /// A line longer than the decoder's `maximumLength` (the rest of the stream is ignored).
    case tooLong
}

/// Splits the stream at `\n` (a trailing `\r` is dropped). A line longer than `maximumLength`
/// yields `.tooLong` once, without buffering it, and the rest of the stream is ignored (the
/// connection handler answers and closes).
package struct LineDecoder: ByteToMessageDecoder {
    package typealias InboundOut = LineEvent
    package let maximumLength: Int
    private var overflowed = false
    /// Where the unfinished line is kept for a restart's hand-over (nil: not kept).
    let pending: PendingInput?

    package init(maximumLength: Int) {
        self.maximumLength = maximumLength
        self.pending = nil
    }

    init(maximumLength: Int, pending: PendingInput) {
        self.maximumLength = maximumLength
        self.pending = pending
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try decode(context: context, buffer: &buffer, atEnd: false)
    }

    private mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer, atEnd: Bool) throws -> DecodingState {
        // Held by the connection handler: what was read stays here (and is what a restart hands
        // over) until it asks for more; at the end of the stream everything is decoded.
        if !atEnd, let pending, pending.isPaused {
            pending.set(buffer.readableBytes > 0 ? buffer.getSlice(at: buffer.readerIndex, length: buffer.readableBytes) : nil)
            return .needMoreData
        }
        if overflowed {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        let view = buffer.readableBytesView
        if let newline = view.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            guard length <= maximumLength else {
                overflow(context: context, buffer: &buffer)
                return .needMoreData
            }
            let carriageReturn = length > 0 && view[newline - 1] == UInt8(ascii: "\r")
            let line = buffer.readSlice(length: carriageReturn ? length - 1 : length)!
            buffer.moveReaderIndex(forwardBy: carriageReturn ? 2 : 1)
            context.fireChannelRead(NIOAny(LineEvent.line(line)))
            return .continue
        }
        if buffer.readableBytes > maximumLength { overflow(context: context, buffer: &buffer) }
        pending?.set(buffer.readableBytes > 0 ? buffer.getSlice(at: buffer.readerIndex, length: buffer.readableBytes) : nil)
        return .needMoreData
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // The connection is gone (not a half-close): nobody can read the answers to lines held
        // back, so they are not decoded at all.
        if let pending, pending.isPaused, !context.channel.isActive {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        while try decode(context: context, buffer: &buffer, atEnd: true) == .continue {}
        if !overflowed, buffer.readableBytes > 0, let line = buffer.readSlice(length: buffer.readableBytes) {
            context.fireChannelRead(NIOAny(LineEvent.line(line)))
        }
        return .needMoreData
    }

    private mutating func overflow(context: ChannelHandlerContext, buffer: inout ByteBuffer) {
        overflowed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        context.fireChannelRead(NIOAny(LineEvent.tooLong))
    }
}
