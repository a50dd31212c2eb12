import CJavaScriptCore
import Foundation
import Logging
import MacroDaemon
import MacroEngineCore
import MacroRPC
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Step 6a: the benchmark macro called through JavaScriptCore's C API in a bare context, with a
/// plain object for `progress`: what JavaScript itself costs under the engine's call.
enum JSFloor {
    static func measure(runs: Int, iterations: Int) throws -> (nanoseconds: Double, allocations: Double?) {
        let context = JSGlobalContextCreate(nil)!
        defer { JSGlobalContextRelease(context) }
        let source = "var progress = { inner: 0 }; (\(Macrod.addMacro))"
        let script = JSStringCreateWithUTF8CString(source)
        defer { JSStringRelease(script) }
        var exception: JSValueRef?
        guard let value = JSEvaluateScript(context, script, nil, nil, 1, &exception), exception == nil,
            let function = JSValueToObject(context, value, nil)
        else { throw BenchError("ladder: the raw function did not compile") }
        JSValueProtect(context, function)
        defer { JSValueUnprotect(context, function) }
        var total = 0.0
        let figures = measureSteps(runs: runs, iterations: iterations) { n in
            for _ in 0..<n {
                var argument: JSValueRef? = JSValueMakeNumber(context, 0.5)
                let result = JSObjectCallAsFunction(context, function, nil, 1, &argument, nil)
                total += JSValueToNumber(context, result, nil)
            }
        }
        blackHole(total)
        return figures
    }
}

extension Ladder {
    /// The socket steps: the whole round trip over a Unix socket in this process, a bare echo,
    /// NIO pipelines of one, two and four handlers answering a canned reply, and macrod itself.
    func socketSteps() throws -> [LadderRow] {
        var rows: [LadderRow] = []
        let request = Array(Self.line.utf8)
        let reply = Array(#"{"jsonrpc":"2.0","id":1,"result":3.5}"#.utf8) + [UInt8(ascii: "\n")]

        let echo = try EchoServer(path: "\(directory)/echo.sock", requestSize: request.count, replySize: reply.count)
        defer { echo.stop() }
        rows.append(try roundTrips(path: echo.path, request: request, replyLength: reply.count, step: "10a socket floor: a blocking echo thread (no NIO)"))

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        for shape in PipelineShape.allCases {
            let path = "\(directory)/\(shape.rawValue).sock"
            let server = try shape.bootstrap(group: group, reply: reply).bind(unixDomainSocketPath: path).wait()
            defer { server.close(promise: nil) }
            rows.append(try roundTrips(path: path, request: request, step: shape.step))
        }

        let daemon = try InProcessMacrod(directory: "\(directory)/macrod")
        rows.append(try roundTrips(path: daemon.socketPath, request: request, step: "10e macrod in this process: the whole macro.call"))
        return rows
    }

    /// `roundTrips` sequential round trips on one connection, `runs` times: wall time per round
    /// trip (median run), allocations (fewest), and the CPU the server's threads used per call
    /// (the process's CPU time less this client thread's, median run).
    /// `replyLength`: the reply's size when it has no newline (the echo's).
    private func roundTrips(path: String, request: [UInt8], replyLength: Int? = nil, step: String) throws -> LadderRow {
        let client = try BlockingSocket(path: path)
        let complete: @Sendable (UnsafeBufferPointer<UInt8>) -> Int? = replyLength.map { BlockingSocket.bytes($0) } ?? BlockingSocket.line
        try client.send(request)
        let first = try client.receive(complete)
        guard first.count > 1 else { throw BenchError("ladder: \(path) answered nothing") }
        var readBuffer = [UInt8](repeating: 0, count: 4096)
        var serverTimes: [Double] = []
        let figures = try request.withUnsafeBytes { requestBytes in
            try readBuffer.withUnsafeMutableBytes { readBytes in
                try measureSteps(runs: runs, iterations: roundTrips) { n in
                    let processBefore = processCPUNanoseconds(), threadBefore = threadCPUNanoseconds()
                    for _ in 0..<n {
                        guard write(client.fd, requestBytes.baseAddress!, requestBytes.count) == requestBytes.count else { throw BenchError("ladder: write failed") }
                        // One reply line per request; the replies are small and never coalesced.
                        var got = 0
                        repeat {
                            let count = read(client.fd, readBytes.baseAddress! + got, readBytes.count - got)
                            guard count > 0 else { throw BenchError("ladder: \(path) closed the connection") }
                            got += count
                        } while replyLength.map({ got < $0 }) ?? (readBytes[got - 1] != UInt8(ascii: "\n"))
                    }
                    let server = Double((processCPUNanoseconds() - processBefore) - (threadCPUNanoseconds() - threadBefore))
                    serverTimes.append(server / Double(n))
                }
            }
        }
        // The warm-up run's figure is left out.
        let measured = serverTimes.dropFirst().sorted()
        let serverCPU = measured.isEmpty ? Double.nan : measured[measured.count / 2]
        return LadderRow(
            step: step, nanoseconds: figures.nanoseconds, allocations: figures.allocations, accumulates: false,
            note: "server CPU \(String(format: "%.0f", serverCPU)) ns per call")
    }
}

/// The process's user + system CPU time, in nanoseconds (every thread).
func processCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The calling thread's CPU time, in nanoseconds.
func threadCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The NIO pipelines compared: each answers every line with the same canned reply, flushed once
/// per read, so what differs is the pipeline alone.
enum PipelineShape: String, CaseIterable {
    /// One handler that cuts the lines itself.
    case one
    /// ByteToMessageHandler(LineDecoder) and a handler of lines.
    case two
    /// macrod's former shape: a pass-through duplex handler where BusyGate is, NIO's
    /// BackPressureHandler, ByteToMessageHandler(LineDecoder), a handler of lines (macrod now
    /// holds reads for writability in its own handler: three).
    case four

    var step: String {
        switch self {
        case .one: "10b NIO, 1 handler (cuts lines itself), canned reply"
        case .two: "10c NIO, 2 handlers (LineDecoder + lines), canned reply"
        case .four: "10d NIO, 4 handlers (macrod's former shape), canned reply"
        }
    }

    func bootstrap(group: MultiThreadedEventLoopGroup, reply: [UInt8]) -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var buffer = channel.allocator.buffer(capacity: reply.count)
                    buffer.writeBytes(reply)
                    let sync = channel.pipeline.syncOperations
                    switch self {
                    case .one:
                        try sync.addHandler(OneHandler(reply: buffer))
                    case .two:
                        try sync.addHandler(ByteToMessageHandler(LineDecoder(maximumLength: 1 << 20)))
                        try sync.addHandler(LineReplyHandler(reply: buffer))
                    case .four:
                        try sync.addHandler(PassThroughHandler())
                        try sync.addHandler(BackPressureHandler())
                        try sync.addHandler(ByteToMessageHandler(LineDecoder(maximumLength: 1 << 20)))
                        try sync.addHandler(LineReplyHandler(reply: buffer))
                    }
                }
            }
    }
}

/// Answers each line event with the canned reply; one flush per read.
final class LineReplyHandler: ChannelInboundHandler {
    typealias InboundIn = LineEvent
    typealias OutboundOut = ByteBuffer
    private let reply: ByteBuffer
    private var unflushed = false

    init(reply: ByteBuffer) { self.reply = reply }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .line = unwrapInboundIn(data) else { return }
        context.write(wrapOutboundOut(reply), promise: nil)
        unflushed = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }
}

/// Cuts the lines of each read itself (keeping an unfinished one for the next read) and answers
/// each with the canned reply; one flush per read.
final class OneHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let reply: ByteBuffer
    private var kept: ByteBuffer?

    init(reply: ByteBuffer) { self.reply = reply }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if var kept = self.kept {
            self.kept = nil
            kept.writeBuffer(&buffer)
            buffer = kept
        }
        var answered = false
        while let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let line = buffer.readSlice(length: newline - buffer.readerIndex)!
            buffer.moveReaderIndex(forwardBy: 1)
            blackHole(line.readableBytes)
            context.write(wrapOutboundOut(reply), promise: nil)
            answered = true
        }
        if buffer.readableBytes > 0 { kept = buffer }
        if answered { context.flush() }
    }
}

/// Passes everything on (where macrod has its BusyGate): a duplex handler's cost in the pipeline.
final class PassThroughHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.fireChannelRead(data) }
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) { context.write(data, promise: promise) }
    func flush(context: ChannelHandlerContext) { context.flush() }
}

/// macrod in this process (``MacroDaemon``, as `macrod` runs it) on a socket in `directory`,
/// with the benchmark's macro and the default durability. It runs until the process exits.
final class InProcessMacrod: Sendable {
    let socketPath: String

    init(directory: String) throws {
        let macros = "\(directory)/macros"
        try FileManager.default.createDirectory(atPath: macros, withIntermediateDirectories: true)
        try Macrod.addMacro.write(toFile: "\(macros)/add.js", atomically: true, encoding: .utf8)
        socketPath = "\(directory)/run/macrod.sock"
        let config = try MacroConfig.parse(
            """
            macros_dir: \(macros)
            state_file: \(directory)/state.json
            log_level: warning
            """, file: "\(directory)/macroengine.yaml")
        var logger = Logger(label: "macrod")
        logger.logLevel = .warning
        let daemon = MacroDaemon(config: config, socketPath: socketPath, configFile: nil, version: "ladder", logger: logger)
        Task.detached {
            do {
                try await daemon.run()
            } catch {
                FileHandle.standardError.write(Data("ladder: the in-process macrod stopped: \(error)\n".utf8))
            }
        }
        // Answers once it listens and has loaded the macro.
        let probe = try BlockingSocket(path: socketPath)
        for _ in 0..<500 {
            try probe.send(Array(Ladder.line.utf8))
            if Macrod.validate(try probe.receive(BlockingSocket.line)) == nil { return }
            usleep(10_000)
        }
        throw BenchError("ladder: the in-process macrod does not answer macro.call")
    }
}
