import Foundation
import Logging
import MacroDaemon
import MacroEngineCore
import MacroRPC
import NIOCore
import NIOEmbedded

/// An invariant a fuzz input broke.
public struct FuzzFailure: Error, CustomStringConvertible {
    /// What broke.
    public var description: String
}

/// The fuzz targets: each takes arbitrary bytes, must never crash, and checks an invariant. The
/// checks throw ``FuzzFailure`` (so a test replaying the corpus fails one case); for libFuzzer,
/// ``all`` turns a failure into a crash, which it reports with the input saved.
public enum FuzzTargets {
    /// The checks by name; each throws ``FuzzFailure`` when its invariant breaks.
    public static let checks: [String: @Sendable (UnsafeRawBufferPointer) throws -> Void] = [
        "rpc-line": rpcLines,
        "macro-file": macroFile,
    ]

    /// The targets by name, for `macro-fuzz NAME`: a broken invariant stops the process.
    public static let all: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = checks.mapValues { check in
        { data in
            do { try check(data) } catch { fatalError("\(error)") }
        }
    }

    /// The socket's input path: bytes through the line decoder (short limit, so over-long lines
    /// happen), every line through the JSON-RPC codec. Invariant: every value the parser accepts
    /// survives `jsonText` and a second parse unchanged, and every reply is valid JSON.
    public static func rpcLines(_ data: UnsafeRawBufferPointer) throws {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        do {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maximumLength: 512)))
            var buffer = channel.allocator.buffer(capacity: data.count)
            buffer.writeBytes(data)
            try channel.writeInbound(buffer)
            while let event = try channel.readInbound(as: LineEvent.self) {
                guard case .line(let bytes) = event else { continue }
                try check(line: bytes)
            }
        } catch let failure as FuzzFailure {
            throw failure
        } catch {
            throw FuzzFailure(description: "the line decoder threw: \(error)")
        }
    }

    static func check(line: ByteBuffer) throws {
        let bytes = Array(line.readableBytesView)
        try check(line: bytes)
        // The socket's path: parsed in the read buffer, encoded into the write buffer, exactly as
        // the array's path and as ``RPCMessage/text`` spell it.
        let inPlace: [RPCMessage]
        let copied: [RPCMessage]
        switch (RPCCodec.parse(line), RPCCodec.parse(bytes)) {
        case (.single(let a), .single(let b)): (inPlace, copied) = ([reply(a)], [reply(b)])
        case (.batch(let a), .batch(let b)): (inPlace, copied) = (a.map(reply), b.map(reply))
        default: throw FuzzFailure(description: "the buffer and the array parse differently: \(bytes)")
        }
        for (one, other) in zip(inPlace, copied) {
            let wire = one.line(allocator: ByteBufferAllocator())
            guard Array(wire.readableBytesView) == Array((other.text + "\n").utf8) else {
                throw FuzzFailure(description: "the socket's reply differs: \(String(buffer: wire)) vs \(other.text)")
            }
        }
        if RPCCodec.isBlank(line) != RPCCodec.isBlank(bytes) { throw FuzzFailure(description: "isBlank differs: \(bytes)") }
    }

    static func check(line bytes: [UInt8]) throws {
        if let value = try? JSONParser.parse(bytes) {
            let text = value.jsonText()
            guard let again = try? JSONParser.parse(text), again == value else {
                throw FuzzFailure(description: "JSON round trip changed \(bytes) -> \(text)")
            }
        }
        let replies: [RPCMessage]
        switch RPCCodec.parse(bytes) {
        case .single(let result): replies = [reply(result)]
        case .batch(let results): replies = results.map(reply)
        }
        for reply in replies where (try? JSONParser.parse(reply.text)) == nil {
            throw FuzzFailure(description: "a reply is not valid JSON: \(reply.text)")
        }
    }

    static func reply(_ result: Result<RPCRequest, RPCFailure>) -> RPCMessage {
        switch result {
        case .success(let request): RPCCodec.response(id: request.id ?? .null, result: request.params)
        case .failure(let failure): RPCCodec.response(id: failure.id, error: failure.error)
        }
    }

    /// Macro-file loading: the bytes as `macros/fuzz.js`, loaded by a ``MacroLibrary`` on one
    /// long-lived engine (100 ms time limit). Invariant: the file either loads or is reported
    /// with an error naming it, and the engine still runs a known-good macro afterwards.
    public static func macroFile(_ data: UnsafeRawBufferPointer) throws {
        let fixture = MacroFileFixture.shared
        let path = fixture.directory + "/fuzz.js"
        guard FileManager.default.createFile(atPath: path, contents: Data(data)) else { throw FuzzFailure(description: "cannot write \(path)") }
        let entry = fixture.library.load(file: path)
        if entry.status == .error, entry.error?.file != path, entry.error?.code != .invalidName {
            throw FuzzFailure(description: "an error that does not name the file: \(String(describing: entry.error))")
        }
        guard (try? fixture.library.call("probe")) == .number(42) else { throw FuzzFailure(description: "the engine stopped working") }
    }
}

/// One engine and macros directory for all macro-file inputs (creating an engine per input
/// would make the fuzzer measure JavaScriptCore's start-up).
final class MacroFileFixture: Sendable {
    static let shared = MacroFileFixture()
    let directory: String
    let library: MacroLibrary

    private init() {
        directory = NSTemporaryDirectory() + "macro-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/probe.js", contents: Data("function () { return 42 }".utf8))
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        let engine = MacroEngine(configuration: .init(timeLimit: .milliseconds(100), memoryLimit: 256 << 20), logger: logger)
        engine.exceptionHandler = { _ in }
        engine.consoleHandler = { _ in }
        library = MacroLibrary(directory: directory, engine: engine, logger: logger)
        _ = try? library.reload()
    }
}
