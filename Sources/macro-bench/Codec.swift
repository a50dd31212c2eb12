import MacroDaemon
import MacroEngineCore
import MacroRPC
import NIOCore

/// The wire codec's share of a call, in-process: one typical `macro.call` line is cut from the
/// read buffer, parsed into a request, and its reply is encoded into the buffer that is written
/// to the socket, as the connection handler does, without the engine or a socket.
enum CodecCost {
    /// The request line (84 bytes, and its newline).
    static let line = #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"add","args":[0.5]}}"# + "\n"
    /// The reply's result: `{"inner":3.5,"calls":12,"label":"ring"}`.
    static let result: MacroValue = ["inner": 3.5, "calls": 12, "label": "ring"]

    /// Nanoseconds per request for decode + encode (best of `rounds` of `requests`).
    static func nanosecondsPerRequest(requests: Int = 1_000_000, rounds: Int = 3) throws -> Double {
        let allocator = ByteBufferAllocator()
        var input = allocator.buffer(string: line)
        let start = input.readerIndex
        var best = Double.infinity
        var written = 0
        for _ in 0..<rounds {
            let began = monotonicNanoseconds()
            for _ in 0..<requests {
                input.moveReaderIndex(to: start)
                // The line decoder: cut the line at its newline (a slice of the read buffer).
                let view = input.readableBytesView
                let newline = view.firstIndex(of: UInt8(ascii: "\n"))!
                let length = newline - view.startIndex
                let carriageReturn = length > 0 && view[newline - 1] == UInt8(ascii: "\r")
                let line = input.readSlice(length: carriageReturn ? length - 1 : length)!
                input.moveReaderIndex(forwardBy: carriageReturn ? 2 : 1)
                // The connection handler: parse in place, answer, encode the reply's line.
                guard case .single(.success(let request)) = RPCCodec.parse(line), let id = request.id else {
                    throw BenchError("codec: the line did not parse as one request")
                }
                let buffer = RPCCodec.response(id: id, result: result).line(allocator: allocator)
                written &+= buffer.readableBytes
            }
            best = min(best, Double(monotonicNanoseconds() - began) / Double(requests))
        }
        guard written == rounds * requests * 74 else { throw BenchError("codec: wrote \(written) bytes") }
        return best
    }
}
