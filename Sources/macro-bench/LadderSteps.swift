import Foundation
import Logging
import MacroDaemon
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The in-memory steps of the ladder: each one the code macrod runs for that step of a
/// `macro.call`, or, where that code is internal to macrod (the router, the params), the same
/// operations composed from the public parts it is made of (named so in the step).
final class Ladder: @unchecked Sendable {
    // @unchecked: built on the main thread, then used by one thread at a time (the main thread,
    // or a task of the engine's loop the main thread waits for).

    /// The request `make bench` sends (84 bytes and the newline).
    static let line = #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"add","args":[0.5]}}"# + "\n"

    let iterations: Int
    let roundTrips: Int
    let runs: Int
    let directory: String
    let engine: MacroEngine
    let model: ProgressModel
    let library: MacroLibrary
    let allocator = ByteBufferAllocator()

    init(iterations: Int, roundTrips: Int, runs: Int) throws {
        self.iterations = iterations
        self.roundTrips = roundTrips
        self.runs = runs
        directory = try makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: "\(directory)/macros", withIntermediateDirectories: true)
        try Macrod.addMacro.write(toFile: "\(directory)/macros/add.js", atomically: true, encoding: .utf8)
        var logger = Logger(label: "ladder")
        logger.logLevel = .critical
        // The engine macrod builds for its default config (the same assembly), with room for the runs.
        let config = MacroConfig(macrosDirectory: "\(directory)/macros", stateFile: "\(directory)/state.json", timeLimit: .seconds(120))
        let environment = try EngineEnvironment(config: config, name: "ladder", logger: logger)
        engine = environment.engine
        model = environment.model
        library = environment.library
        let entry = library.load(file: "\(directory)/macros/add.js")
        guard entry.status != .error else { throw BenchError("ladder: add.js did not load: \(String(describing: entry.error))") }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Times `body` on the engine's loop (steps that must run there: the call, the turn).
    private func onLoop(_ body: @escaping @Sendable (Int) throws -> Void) throws -> (nanoseconds: Double, allocations: Double?) {
        let runs = runs, iterations = iterations
        return try engine.eventLoop.submit { try measureSteps(runs: runs, iterations: iterations, body) }.wait()
    }

    /// The request line cut from a read buffer, as the line decoder leaves it.
    private func cutLine() -> ByteBuffer {
        var input = allocator.buffer(string: Self.line)
        return input.readSlice(length: input.readableBytes - 1)!
    }

    /// The parsed request.
    private func request() throws -> RPCRequest {
        guard case .single(.success(let request)) = RPCCodec.parse(cutLine()) else { throw BenchError("ladder: the line did not parse") }
        return request
    }

    /// Steps 1 to 8 and their composition.
    func steps() throws -> [LadderRow] {
        var rows: [LadderRow] = []
        var sink = 0

        // 1. The line cut: LineDecoder.decode's work on the read buffer (find the newline, slice).
        do {
            var input = allocator.buffer(string: Self.line)
            let start = input.readerIndex
            let figures = measureSteps(runs: runs, iterations: iterations) { n in
                for _ in 0..<n {
                    input.moveReaderIndex(to: start)
                    let view = input.readableBytesView
                    let newline = view.firstIndex(of: UInt8(ascii: "\n"))!
                    let length = newline - view.startIndex
                    let carriageReturn = length > 0 && view[newline - 1] == UInt8(ascii: "\r")
                    let line = input.readSlice(length: carriageReturn ? length - 1 : length)!
                    input.moveReaderIndex(forwardBy: carriageReturn ? 2 : 1)
                    sink &+= line.readableBytes
                }
            }
            rows.append(LadderRow(step: "1 line cut (LineDecoder's cut: a slice of the read buffer)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 2. The parse: RPCCodec.parse of the slice, in place (JSONParser, the raw id kept).
        do {
            let line = cutLine()
            let figures = measureSteps(runs: runs, iterations: iterations) { n in
                for _ in 0..<n {
                    guard case .single(.success(let request)) = RPCCodec.parse(line) else { fatalError("ladder: parse failed") }
                    sink &+= request.method.utf8.count
                }
            }
            rows.append(LadderRow(step: "2 parse (RPCCodec.parse: the request, params, raw id)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 3. The route: the method table's lookup (RequestRouter.admit's RPCMethod(rawValue:)),
        // then the call id as admit reserves it. A socket's request has no reply promise: its
        // reply goes straight back to its connection's handler (ReplyRoute.connection).
        let request = try request()
        do {
            let engine = engine
            let figures = try onLoop { n in
                var sink = 0
                for _ in 0..<n {
                    guard let method = RPCMethod(rawValue: request.method) else { fatalError("ladder: unknown method") }
                    let callID = method == .call ? engine.reserveCallID() : nil
                    sink &+= (callID ?? 0) &+ (method.defersCommit ? 1 : 0)
                }
                blackHole(sink)
            }
            rows.append(LadderRow(step: "3 route (RPCMethod lookup, call id)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 4. The hand-over: one task of the engine's loop per read (the engine lane's queue, then
        // its `loop.execute(run)` from the loop itself, io_thread: engine). A call that ends in its first
        // turn has no future and no callback since CallStart; one that awaits adds a future and
        // one callback (not measured here).
        do {
            let engine = engine
            let loop = engine.eventLoop
            let runs = runs, iterations = iterations
            let figures = try loop.flatSubmit { HandOverRun(loop: loop, runs: runs, iterations: iterations).start() }.wait()
            rows.append(LadderRow(step: "4 hand-over (the lane's queue, a loop task per read)", nanoseconds: figures.0, allocations: figures.1))
        }

        // 5. The params: Params' checks for macro.call (known keys, the name an identifier and
        // no engine global, args an array, timeoutMs, announce), composed from the same calls.
        do {
            let engine = engine
            let known = RPCMethod.call.paramNames ?? []
            let figures = try onLoop { n in
                var sink = 0
                for _ in 0..<n {
                    guard case .object(let fields) = request.params, !fields.keys.contains(where: { !known.contains($0) }) else { fatalError() }
                    let value = request.params
                    guard case .string(let name) = value["name"], MacroName.shadowingReason(name) == nil, MacroName.isIdentifier(name),
                        try !engine.isEngineGlobal(name)
                    else { fatalError("ladder: params") }
                    guard case .array(let arguments) = value["args"] else { fatalError() }
                    guard case .undefined = value["timeoutMs"], case .undefined = value["announce"] else { fatalError() }
                    sink &+= arguments.count &+ name.utf8.count
                }
                blackHole(sink)
            }
            rows.append(LadderRow(step: "5 params (Params' checks, from the same public calls)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 6. The call: MacroLibrary.callOutcome, as CallMethods makes it (the entry, the turn,
        // the watchdog, JavaScript, the result's conversion; no future for a call that ends in
        // its first turn).
        do {
            let engine = engine, library = library
            let calls: @Sendable (Int) throws -> Void = { n in
                var succeeded = 0
                for _ in 0..<n {
                    let start = library.callOutcome("add", arguments: [.number(0.5)], deadline: nil, callID: engine.reserveCallID())
                    if case .ended(.success) = start { succeeded &+= 1 }
                }
                guard succeeded == n else { fatalError("ladder: \(n - succeeded) calls failed or went pending") }
            }
            let figures = try onLoop(calls)
            rows.append(LadderRow(step: "6 call (MacroLibrary.callOutcome: entry, turn, JS, result)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))

            // 6b. The run record: step 6 again without the run log (record_runs: false); the
            // difference is what recording the run costs (contained in step 6).
            let runs = engine.runLog
            engine.runLog = nil
            defer { engine.runLog = runs }
            let unrecorded = try onLoop(calls)
            rows.append(
                LadderRow(
                    step: "  6b of which the run record (6 minus 6 with record_runs: false)", nanoseconds: figures.nanoseconds - unrecorded.nanoseconds,
                    allocations: figures.allocations.flatMap { recorded in unrecorded.allocations.map { recorded - $0 } }, accumulates: false))
        }

        // 6a. JavaScript alone: the same function called through JavaScriptCore's C API in a
        // bare context (no entry, turn or conversion): the floor under step 6 (contained in it).
        do {
            let figures = try JSFloor.measure(runs: runs, iterations: iterations)
            rows.append(
                LadderRow(
                    step: "  6a of which JavaScriptCore alone (JSObjectCallAsFunction)", nanoseconds: figures.nanoseconds, allocations: figures.allocations, accumulates: false))
        }

        // 7. The turn's observer and the statistics: what EngineHost's turn observer and
        // CallMethods record per call (occupancy's last entry, StatisticsTable's start, turn,
        // finish with two clock reads; the Prometheus counter and histogram).
        do {
            let engine = engine
            let figures = try onLoop { n in
                let table = StatisticsTable(metrics: EngineMetrics())
                for id in 1...n {
                    let start = NIODeadline.now().uptimeNanoseconds
                    table.started(id, macro: "add")
                    let entry = engine.occupancy.takeLastEntry()
                    table.turnEnded(call: id, nanoseconds: entry.nanoseconds &+ 900)
                    let elapsed = NIODeadline.now().uptimeNanoseconds &- start
                    table.finished(id, macro: "add", nanoseconds: elapsed, failure: nil)
                    table.turnEnded(call: 0, nanoseconds: 0)
                }
            }
            rows.append(LadderRow(step: "7 turn observer + statistics (StatisticsTable, metrics)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 8. The journal line: the model's values by name and StateJournal.append (the line and
        // its write(2) to a file in /tmp; fsync: interval, so no fdatasync).
        do {
            let store = StateStore(path: "\(directory)/state.json")
            let journal = StateJournal(store: store)
            try journal.prepare()
            let model = model
            let figures = try onLoop { n in
                for _ in 0..<n { try journal.append(model.valuesByName, durable: false) }
            }
            rows.append(LadderRow(step: "8 journal line (valuesByName, StateJournal.append, write)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 9. The encode: the reply as RequestRouter makes it and ConnectionHandler writes it
        // (RPCCodec.response, then RPCMessage.line into a new ByteBuffer).
        do {
            guard let id = request.id else { throw BenchError("ladder: the request has no id") }
            let allocator = allocator
            let figures = measureSteps(runs: runs, iterations: iterations) { n in
                for _ in 0..<n {
                    let buffer = RPCCodec.response(id: id, result: .number(3.5)).line(allocator: allocator)
                    sink &+= buffer.readableBytes
                }
            }
            rows.append(LadderRow(step: "9 encode (RPCCodec.response, RPCMessage.line)", nanoseconds: figures.nanoseconds, allocations: figures.allocations))
        }

        // 1-9 in one loop on the engine's thread, each call's output the next step's input.
        do {
            let engine = engine, library = library, model = model, allocator = allocator
            let store = StateStore(path: "\(directory)/state-composed.json")
            let journal = StateJournal(store: store)
            try journal.prepare()
            let figures = try onLoop { n in
                var input = allocator.buffer(string: Self.line)
                let start = input.readerIndex
                let table = LoopOnly(StatisticsTable(metrics: EngineMetrics()))
                let written = LoopOnly(0)
                for _ in 0..<n {
                    input.moveReaderIndex(to: start)
                    let view = input.readableBytesView
                    let newline = view.firstIndex(of: UInt8(ascii: "\n"))!
                    let line = input.readSlice(length: newline - view.startIndex)!
                    input.moveReaderIndex(forwardBy: 1)
                    guard case .single(.success(let request)) = RPCCodec.parse(line), let id = request.id,
                        let method = RPCMethod(rawValue: request.method),
                        case .string(let name) = request.params["name"], MacroName.isIdentifier(name), try !engine.isEngineGlobal(name),
                        case .array(let arguments) = request.params["args"]
                    else { fatalError("ladder: composed") }
                    let callID = method == .call ? engine.reserveCallID() : 0
                    let began = NIODeadline.now().uptimeNanoseconds
                    table.value.started(callID, macro: name)
                    guard case .ended(let result) = library.callOutcome(name, arguments: arguments, deadline: nil, callID: callID) else {
                        fatalError("ladder: the call went pending")
                    }
                    let entry = engine.occupancy.takeLastEntry()
                    table.value.turnEnded(call: entry.call, nanoseconds: entry.nanoseconds)
                    table.value.finished(callID, macro: name, nanoseconds: NIODeadline.now().uptimeNanoseconds &- began, failure: nil)
                    try? journal.append(model.valuesByName, durable: false)
                    guard case .success(let value) = result else { fatalError("ladder: the call failed") }
                    written.value &+= RPCCodec.response(id: id, result: value).line(allocator: allocator).readableBytes
                }
                guard written.value > 0 else { fatalError("ladder: nothing encoded") }
            }
            rows.append(LadderRow(step: "1-9 composed (one loop on the engine's thread)", nanoseconds: figures.nanoseconds, allocations: figures.allocations, accumulates: false))
        }
        blackHole(sink)
        return rows
    }
}

/// Step 4's runs, on the engine's loop: each run is `iterations` tasks of the loop, each making
/// a promise, hanging two callbacks on its future and completing it; a last task ends the run.
final class HandOverRun: @unchecked Sendable {
    // @unchecked: only the loop's thread touches it after `start()`.
    let loop: any EventLoop
    let runs: Int
    let iterations: Int
    var times: [Double] = []
    var fewest = Double.infinity
    var counter = 0
    /// The lane's queue of batches (here, their numbers).
    let queue = Mutex(CircularBuffer<Int>())
    let done: EventLoopPromise<(Double, Double?)>

    init(loop: any EventLoop, runs: Int, iterations: Int) {
        self.loop = loop
        self.runs = runs
        self.iterations = iterations
        done = loop.makePromise()
    }

    /// Starts the warm-up run, then the measured ones; completes with (ns, allocations) per task.
    func start() -> EventLoopFuture<(Double, Double?)> {
        run(runs + 1)
        return done.futureResult
    }

    /// The lane's task: the next batch out of the queue.
    private func takeBatch() {
        counter &+= queue.withLock { $0.isEmpty ? 0 : $0.removeFirst() }
    }

    private func run(_ remaining: Int) {
        let n = remaining == runs + 1 ? max(1, iterations / 10) : iterations
        let allocations = MallocCounter.count()
        let start = monotonicNanoseconds()
        let loop = loop
        for index in 0..<n {
            // As EngineLane.submit: the batch into the lane's queue, then one task, `run`, that
            // takes it out.
            queue.withLock { $0.append(index) }
            loop.execute(takeBatch)
        }
        loop.execute { [self] in
            let elapsed = monotonicNanoseconds() - start
            if remaining <= runs {
                times.append(Double(elapsed) / Double(n))
                fewest = min(fewest, Double(MallocCounter.count() - allocations) / Double(n))
            }
            if remaining > 1 {
                run(remaining - 1)
            } else {
                times.sort()
                blackHole(counter)
                done.succeed((times[times.count / 2], MallocCounter.isAvailable ? fewest : nil))
            }
        }
    }
}

/// A value only the engine loop's thread touches, for the futures' callbacks of a step that runs
/// there (they complete on that loop, in the same task).
final class LoopOnly<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Keeps a value alive in the optimiser's eyes.
@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }
