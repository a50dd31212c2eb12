import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `macro-bench`: macrod side by side with Redis Functions, a plain Node.js server, the floor (a
/// minimal server doing macrod's essential work) and the physical limit (a bare Unix-socket
/// ping-pong), printed as one table. Run by `make bench`.
@main
struct MacroBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "macro-bench",
        abstract: "macrod's benchmark (make bench), its ladder of in-process steps, and leak soak (make soak).",
        subcommands: [BenchCommand.self, SoakCommand.self, LadderCommand.self, MinimalServerCommand.self],
        defaultSubcommand: BenchCommand.self)
}

/// `macro-bench run`: the benchmark table.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Benchmark macrod against Redis FCALL, a Node.js server, a minimal server, a bare Unix-socket ping-pong and a minimal JavaScriptCore process.",
        discussion: """
            Starts a private macrod (from the same build folder) and a private redis-server (appendonly yes, \
            appendfsync everysec: the durability of macrod's default fsync policy), both on Unix sockets in a \
            temporary directory that is removed afterwards, then prints one table: our figure, the anchor's \
            figure from the same run, their ratio, and the target. Use a release build (make bench).
            """)

    @Option(help: "Sequential calls per server in scenario 1.")
    var calls = 20_000

    @Option(help: "Calls per client in scenario 2.")
    var callsPerClient = 2_000

    @Option(parsing: .upToNextOption, help: "Client counts for scenario 2.")
    var clients: [Int] = [8, 50]

    @Option(help: "Requests in flight per client in scenario 2's pipelined rows (redis-benchmark -P).")
    var pipeline = 16

    @Option(help: "Macro saves measured in scenario 4.")
    var saves = 100

    @Option(help: "Runs of each command in scenario 5 (after 3 warm-up runs).")
    var cliRuns = 30

    @Option(help: "JS -> native calls in scenario 3.")
    var bridgeCalls = 1_000_000

    @Option(help: "The minimal JavaScriptCore program (make bench builds Benchmarks/minimal-jsc.c).")
    var minimalJSC: String?

    @Flag(help: "Leave Redis out (its columns show n/a).")
    var noRedis = false

    @Option(help: "The plain Node.js NDJSON server, the second anchor (make bench passes Benchmarks/node-server.js).")
    var nodeServer: String?

    @Flag(help: "Leave out the minimal server, the floor anchor (its rows show n/a).")
    var noMinimalServer = false

    @Option(help: "Sequential calls counted under strace -c -f for the syscalls-per-call rows (0: skip).")
    var straceCalls = 2_000

    @Option(help: "Extra YAML lines for the benchmarked macrod's config (e.g. 'fsync: always').")
    var macrodConfig = ""

    @Flag(help: "Skip the second pass of scenarios 1 and 2 with io_thread: separate.")
    var noEngineThread = false

    @Flag(help: "Run scenario 1 only (e.g. to compare fsync policies with --macrod-config).")
    var roundTripOnly = false

    @Flag(help: "Run section 11 only: the run records' cost, recorded vs record_runs: false.")
    var recordsOnly = false

    @Flag(help: "Only measure the wire codec in-process (decode + encode of one call, scenario 3's note) and print it.")
    var codecOnly = false

    /// `add` with a store read and write (section 10).
    static let storedMacro = """
        function addstored(amount) {
            let v = progress.inner + amount;
            if (v > 10) v -= 10;
            progress.inner = v;
            store.set("n", (store.get("n") ?? 0) + 1);
            return v;
        }
        """

    mutating func run() throws {
        if codecOnly {
            print("Wire codec: decode+encode of one call (84-byte line, 74-byte reply, best of 3 x 1,000,000): \(format(try CodecCost.nanosecondsPerRequest())) ns")
            return
        }
        let binaries = binaryDirectory()
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var report = Report()
        report.header(binaries: binaries)

        if recordsOnly {
            let ours = Wire(request: Macrod.call("add", "0.5"), complete: BlockingSocket.line, validate: Macrod.validate)
            try RunRecordCost.measure(
                into: &report, binaries: binaries, directory: directory, wire: ours, calls: calls, callsPerClient: callsPerClient,
                clients: clients.max() ?? 50, macrodConfig: macrodConfig)
            report.print()
            return
        }
        let macrod = try Macrod(binaries: binaries, directory: "\(directory)/macrod", extraConfig: macrodConfig)
        defer { macrod.stop() }
        usleep(500_000)
        let idleRSS = macrod.child.residentMiB
        var redis: RedisServer?
        if !noRedis { redis = try RedisServer(directory: "\(directory)") }
        defer { redis?.stop() }
        if let redis { report.note("Redis \(redis.version): appendonly yes, appendfsync everysec; macrod: fsync interval (1 s). Both write every change before replying.") }
        let node = try nodeServer.map { try NodeServer(script: $0, directory: directory) }
        defer { node?.stop() }
        if let node { report.note("Node.js \(node.version): Benchmarks/node-server.js, one fs.writeSync journal line per call before the reply, no batching.") }
        let floorServer = noMinimalServer ? nil : try MinimalServer(directory: directory)
        defer { floorServer?.stop() }
        if floorServer != nil {
            report.note(
                "Minimal server (the floor): macrod's essential work on one thread in an epoll loop of its own; the call scanned from the bytes, one JavaScriptCore call of the same macro through two native callbacks, one journal write per loop tick, one reply write per connection per tick (macro-bench minimal-server)."
            )
        }

        let request = Macrod.call("add", "0.5")
        let ours = Wire(request: request, complete: BlockingSocket.line, validate: Macrod.validate)
        let probe = try BlockingSocket(path: macrod.socketPath)
        try probe.send(request)
        let replySize = try probe.receive(BlockingSocket.line).count
        let echo = try EchoServer(path: "\(directory)/echo.sock", requestSize: request.count, replySize: replySize)
        defer { echo.stop() }
        let bare = Wire(request: request, complete: BlockingSocket.bytes(replySize), validate: { _ in nil })
        let fcall = Wire(
            request: RedisServer.fcall(amount: "0.5"), complete: RedisServer.complete,
            validate: { reply in
                reply.first == UInt8(ascii: "$") ? nil : "redis answered: \(String(decoding: reply, as: UTF8.self))"
            })
        report.note("Request \(request.count) bytes, reply \(replySize) bytes (the ping-pong sends the same).")

        // 1. Sequential round trip.
        var served = 0
        let bareSequential = try runLoad(path: echo.path, wire: bare, clients: 1, callsPerClient: calls)
        let oursSequential = try runLoad(path: macrod.socketPath, wire: ours, clients: 1, callsPerClient: calls, server: macrod.child)
        served += calls + 200
        let redisSequential = try redis.map { try runLoad(path: $0.socketPath, wire: fcall, clients: 1, callsPerClient: calls, server: $0.child) }
        let nodeSequential = try node.map { try runLoad(path: $0.socketPath, wire: ours, clients: 1, callsPerClient: calls, server: $0.child) }
        let floorSequential = try floorServer.map { try runLoad(path: $0.socketPath, wire: ours, clients: 1, callsPerClient: calls, server: $0.child) }
        report.section("1. Call round trip, 1 client, sequential (\(calls) calls)")
        report.row(
            "p50 round trip vs bare socket", ours: oursSequential.percentile(0.5), anchor: bareSequential.percentile(0.5),
            unit: "us", lowerIsBetter: true, target: 1.3)
        report.row(
            "p50 round trip vs Redis FCALL", ours: oursSequential.percentile(0.5), anchor: redisSequential?.percentile(0.5),
            unit: "us", lowerIsBetter: true, target: nil)
        report.row(
            "p99 round trip vs Redis FCALL", ours: oursSequential.percentile(0.99), anchor: redisSequential?.percentile(0.99),
            unit: "us", lowerIsBetter: true, target: nil)
        report.versus(
            "", ours: oursSequential,
            calls: [("Redis FCALL", redisSequential, 1), ("Node.js server", nodeSequential, 1), ("bare socket", bareSequential, 0.9), ("minimal server", floorSequential, 0.8)],
            cpu: [("Redis", redisSequential, 0.8), ("minimal server", floorSequential, nil)])
        report.row(
            "context switches per call (server)", ours: oursSequential.serverContextSwitches, anchor: redisSequential?.serverContextSwitches,
            unit: "", lowerIsBetter: true, target: nil, absoluteTarget: 1.1)
        report.note(
            "Context switches per call: Redis \(redisSequential.map { format($0.serverContextSwitches) } ?? "n/a"), Node.js \(nodeSequential.map { format($0.serverContextSwitches) } ?? "n/a"); server CPU per call: Node.js \(nodeSequential.map { format($0.serverCPUMicros) } ?? "n/a") us."
        )
        if let floorSequential {
            report.note(floorNote(floorSequential, redis: redisSequential, bare: bareSequential))
        }
        report.note(
            "Server CPU per call: macrod \(format(oursSequential.serverCPUMicros)) us, Redis \(redisSequential.map { format($0.serverCPUMicros) } ?? "n/a") us. Client CPU per call: \(format(oursSequential.clientCPUMicros)) us with macrod, \(redisSequential.map { format($0.clientCPUMicros) } ?? "n/a") us with Redis."
        )

        if roundTripOnly {
            report.print()
            return
        }

        // 2. Concurrent clients.
        var busiestCallsPerSecond: (clients: Int, rate: Double)?
        report.section("2. Throughput, concurrent clients (\(callsPerClient) calls each)")
        for count in clients {
            let oursLoad = try runLoad(path: macrod.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, server: macrod.child)
            served += count * (callsPerClient + 200)
            let redisLoad = try redis.map { try runLoad(path: $0.socketPath, wire: fcall, clients: count, callsPerClient: callsPerClient, server: $0.child) }
            let nodeLoad = try node.map { try runLoad(path: $0.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, server: $0.child) }
            let floorLoad = try floorServer.map { try runLoad(path: $0.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, server: $0.child) }
            let bareLoad = try runLoad(path: echo.path, wire: bare, clients: count, callsPerClient: callsPerClient)
            if oursLoad.callsPerSecond > busiestCallsPerSecond?.rate ?? 0 { busiestCallsPerSecond = (count, oursLoad.callsPerSecond) }
            report.row(
                "\(count) clients: p99 vs Redis FCALL", ours: oursLoad.percentile(0.99), anchor: redisLoad?.percentile(0.99),
                unit: "us", lowerIsBetter: true, target: nil)
            report.versus(
                "\(count) clients: ", ours: oursLoad,
                calls: [("Redis FCALL", redisLoad, 1.3), ("Node.js server", nodeLoad, 1.3), ("minimal server", floorLoad, 0.8), ("bare socket", bareLoad, nil)],
                cpu: [("Redis", redisLoad, 0.8), ("minimal server", floorLoad, nil)])
            if let floorLoad { report.note("\(count) clients: " + floorNote(floorLoad, redis: redisLoad, bare: bareLoad)) }
        }

        // 2 (pipelined): every client keeps `pipeline` requests in flight, for both servers.
        for count in [1] + clients {
            let oursLoad = try runLoad(path: macrod.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, pipeline: pipeline, server: macrod.child)
            served += count * (callsPerClient + 200)
            let redisLoad = try redis.map { try runLoad(path: $0.socketPath, wire: fcall, clients: count, callsPerClient: callsPerClient, pipeline: pipeline, server: $0.child) }
            let nodeLoad = try node.map { try runLoad(path: $0.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, pipeline: pipeline, server: $0.child) }
            let floorLoad = try floorServer.map {
                try runLoad(path: $0.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, pipeline: pipeline, server: $0.child)
            }
            let label = "\(count) client\(count == 1 ? "" : "s"), \(pipeline) in flight each"
            report.versus(
                "\(label): ", ours: oursLoad,
                calls: [("Redis FCALL", redisLoad, 2), ("Node.js server", nodeLoad, 1), ("minimal server", floorLoad, 0.8)],
                cpu: [("Redis", redisLoad, nil), ("minimal server", floorLoad, nil)])
            if let floorLoad { report.note("\(count) client\(count == 1 ? "" : "s"), pipelined: " + floorNote(floorLoad, redis: redisLoad, bare: nil)) }
        }

        // The always-on statistics' share of a call, at the rates just measured.
        let recording = try StatisticsCost.nanosecondsPerCall()
        report.section("7. Per-macro statistics on the hot path (recording per call, in-process)")
        report.row(
            "1 client: share of a call's time", ours: recording / 1000 * oursSequential.callsPerSecond / 1e6 * 100, anchor: nil,
            unit: "%", lowerIsBetter: true, target: nil, absoluteTarget: 2)
        if let busiest = busiestCallsPerSecond {
            report.row(
                "\(busiest.clients) clients: share of a call's time", ours: recording / 1000 * busiest.rate / 1e6 * 100, anchor: nil,
                unit: "%", lowerIsBetter: true, target: nil, absoluteTarget: 2)
        }
        report.note("Recording one call (start, turn's JavaScript time, latency histogram, Prometheus counter and histogram): \(format(recording)) ns")

        // 1 and 2 again with the connections on a thread of their own (io_thread: separate).
        if !noEngineThread {
            let shared = try Macrod(binaries: binaries, directory: "\(directory)/macrod-separate-thread", extraConfig: "io_thread: separate\n" + macrodConfig)
            defer { shared.stop() }
            report.section("1+2 again with io_thread: separate (connections on a thread of their own: three wake-ups per call)")
            let sequential = try runLoad(path: shared.socketPath, wire: ours, clients: 1, callsPerClient: calls, server: shared.child)
            report.row(
                "p50 round trip vs bare socket", ours: sequential.percentile(0.5), anchor: bareSequential.percentile(0.5),
                unit: "us", lowerIsBetter: true, target: 2.0)
            report.row(
                "calls/s vs Redis FCALL", ours: sequential.callsPerSecond, anchor: redisSequential?.callsPerSecond,
                unit: "/s", lowerIsBetter: false, target: 1)
            for count in clients {
                let load = try runLoad(path: shared.socketPath, wire: ours, clients: count, callsPerClient: callsPerClient, server: shared.child)
                let redisLoad = try redis.map { try runLoad(path: $0.socketPath, wire: fcall, clients: count, callsPerClient: callsPerClient) }
                report.row(
                    "\(count) clients: calls/s vs Redis FCALL", ours: load.callsPerSecond, anchor: redisLoad?.callsPerSecond,
                    unit: "/s", lowerIsBetter: false, target: 1)
            }
            report.note(
                "Server CPU per call with io_thread: separate: \(format(sequential.serverCPUMicros)) us sequential, \(format(sequential.serverContextSwitches)) context switches per call"
            )
        }

        // 6 (part). Memory after 100,000 calls and with 50 connected clients.
        if served < 100_000 {
            _ = try runLoad(path: macrod.socketPath, wire: ours, clients: 4, callsPerClient: (100_000 - served) / 4 + 1, warmup: 0)
            served = 100_000
        }
        let afterCallsRSS = macrod.child.residentMiB
        var connected: [BlockingSocket] = []
        for _ in 0..<50 {
            let socket = try BlockingSocket(path: macrod.socketPath)
            try socket.send(request)
            try socket.receive(BlockingSocket.line)
            connected.append(socket)
        }
        let connectedRSS = macrod.child.residentMiB
        connected.removeAll()

        // 4. Live reload.
        let reload = try measureReload(macrod: macrod, saves: saves)
        report.section("4. Live reload: write a macro file -> first call returning the new result (\(saves) saves)")
        report.row("p50", ours: reload.p50, anchor: nil, unit: "ms", lowerIsBetter: true, target: nil, absoluteTarget: 20)
        report.row("p99", ours: reload.p99, anchor: nil, unit: "ms", lowerIsBetter: true, target: nil, absoluteTarget: 50)
        let moduleReload = try measureModuleReload(macrod: macrod, saves: saves)
        report.row("module edit p50 (macro unchanged)", ours: moduleReload.p50, anchor: nil, unit: "ms", lowerIsBetter: true, target: nil, absoluteTarget: 20)
        report.row("module edit p99 (macro unchanged)", ours: moduleReload.p99, anchor: nil, unit: "ms", lowerIsBetter: true, target: nil, absoluteTarget: 50)
        report.note(
            "A module edit: lib/reloadmod.js (`export const V = N`) is saved; `usesmod.js` imports V and is not saved; timed from the write to the first call of usesmod returning N."
        )

        // 9. Triggers: an idle daemon with 100 scheduled macros, and a watcher on the call path.
        let idleBefore = try idleCost(macrod.child, seconds: 3)
        let scheduled = try scheduleMacros(macrod, count: 100)
        let idleAfter = try idleCost(macrod.child, seconds: 3)
        let plainCalls = try runLoad(path: macrod.socketPath, wire: ours, clients: 1, callsPerClient: calls, server: macrod.child)
        try "export const triggers = [{ watch: \"inner\", above: 100 }];\nexport default function watcher(event) {}\n".write(
            toFile: "\(macrod.macrosDirectory)/watcher.js", atomically: true, encoding: .utf8)
        try waitForTriggers(macrod, count: scheduled + 1)
        let watchedCalls = try runLoad(path: macrod.socketPath, wire: ours, clients: 1, callsPerClient: calls, server: macrod.child)
        report.section("9. Triggers: idle cost of 100 scheduled macros; a watcher on the call path (\(calls) calls, 1 client)")
        report.row(
            "idle wake-ups/s, 100 scheduled macros vs none", ours: idleAfter.wakeups, anchor: idleBefore.wakeups, unit: "/s", lowerIsBetter: true, target: 1.1)
        report.row(
            "idle CPU %, 100 scheduled macros vs none", ours: idleAfter.cpuPercent, anchor: idleBefore.cpuPercent, unit: "%", lowerIsBetter: true, target: nil,
            absoluteTarget: 1)
        report.row(
            "calls/s with a watcher on the channel vs without", ours: watchedCalls.callsPerSecond, anchor: plainCalls.callsPerSecond, unit: "/s",
            lowerIsBetter: false, target: 0.95)
        report.row(
            "server CPU per call with a watcher vs without", ours: watchedCalls.serverCPUMicros, anchor: plainCalls.serverCPUMicros, unit: "us",
            lowerIsBetter: true, target: 1.05)
        report.note(
            "The 100 macros declare `cron: \"0 0 1 1 *\"` (armed, not due in the window); the watcher watches `inner`, which every call of `add` changes, with a threshold it never passes, so the cost is the watcher's check on each committed change, not a run."
        )

        // 10. The store: a store write on the call path.
        try Self.storedMacro.write(toFile: "\(macrod.macrosDirectory)/addstored.js", atomically: true, encoding: .utf8)
        try waitForMacro(macrod, "addstored")
        let stored = Wire(request: Macrod.call("addstored", "0.5"), complete: BlockingSocket.line, validate: Macrod.validate)
        report.section("10. The store: add with a store.get and a store.set, vs add (best of 3 alternating rounds)")
        for count in [1, 8] {
            let per = count == 1 ? calls : callsPerClient
            var plainRounds: [LoadResult] = [], storedRounds: [LoadResult] = []
            for _ in 0..<3 {
                plainRounds.append(try runLoad(path: macrod.socketPath, wire: ours, clients: count, callsPerClient: per, server: macrod.child))
                storedRounds.append(try runLoad(path: macrod.socketPath, wire: stored, clients: count, callsPerClient: per, server: macrod.child))
            }
            let plain = plainRounds.max { $0.callsPerSecond < $1.callsPerSecond }!
            let withStore = storedRounds.max { $0.callsPerSecond < $1.callsPerSecond }!
            report.row(
                "\(count) client\(count == 1 ? "" : "s"): calls/s with a store write vs without", ours: withStore.callsPerSecond, anchor: plain.callsPerSecond,
                unit: "/s", lowerIsBetter: false, target: 0.95)
            report.row(
                "\(count) client\(count == 1 ? "" : "s"): server CPU per call with a store write vs without", ours: withStore.serverCPUMicros,
                anchor: plain.serverCPUMicros, unit: "us", lowerIsBetter: true, target: 1.05)
        }
        report.note(
            "`addstored` is `add` plus `store.set(\"n\", (store.get(\"n\") ?? 0) + 1)`: each call changes a key, so each commit also appends a line to the store journal (fsync: interval). Both on the first macrod, which by now also has section 9's 100 scheduled macros and watcher."
        )

        // 11. Run records (after sections 9 and 10, on macrods of their own).
        try RunRecordCost.measure(
            into: &report, binaries: binaries, directory: directory, wire: ours, calls: calls, callsPerClient: callsPerClient,
            clients: clients.max() ?? 50, macrodConfig: macrodConfig)

        // 5. CLI, whole process.
        report.section("5. CLI, whole process (median of \(cliRuns) runs)")
        let macroRemote = try medianRun("\(binaries)/macro", ["run", "add", "0.5", "--socket", macrod.socketPath])
        let redisCLI = try redis.flatMap { redis in
            try which("redis-cli").map { try medianRun($0, ["-s", redis.socketPath, "FCALL", "add", "1", "progress", "0.5"]) }
        }
        report.row(
            "macro run (daemon) vs redis-cli FCALL", ours: macroRemote.seconds * 1000, anchor: redisCLI.map { $0.seconds * 1000 },
            unit: "ms", lowerIsBetter: true, target: 1.5)
        let localState = "\(directory)/local-state.json"
        let macroLocal = try medianRun("\(binaries)/macro", ["run", "--local", "add", "0.5", "--macros", macrod.macrosDirectory, "--state", localState])
        let minimal = try minimalJSC.map { try medianRun($0, []) }
        report.row(
            "macro run --local vs minimal JSC process", ours: macroLocal.seconds * 1000, anchor: minimal.map { $0.seconds * 1000 },
            unit: "ms", lowerIsBetter: true, target: 2)

        // 3. Native bridge.
        report.section("3. Native bridge: \(bridgeCalls) JS -> native calls (best of 3)")
        let bridged = try Bridge.engine(calls: bridgeCalls)
        let raw = try Bridge.raw(calls: bridgeCalls)
        report.row("ns per call vs raw JSC C callback", ours: bridged, anchor: raw, unit: "ns", lowerIsBetter: true, target: 1.5)
        let rawClass = try Bridge.rawClass(calls: bridgeCalls)
        report.note("The same loop through a raw JSClass callAsFunction (the mechanism MacroEngine's functions use): \(format(rawClass)) ns per call")
        let inProcess = try InProcessCall.measure(calls: 20_000)
        report.note("One whole macro call in-process (engine.callFuture of the benchmark macro on the engine's loop, no socket, no journal): \(format(inProcess / 1000)) us")
        let codec = try CodecCost.nanosecondsPerRequest()
        report.note(
            "Wire codec: decode+encode of one call (cut the 84-byte line from the read buffer, parse it, encode the 74-byte reply into the buffer written to the socket; in-process, best of 3 x 1,000,000): \(format(codec)) ns"
        )

        // 6. Memory.
        report.section("6. Memory (resident set)")
        report.row("macrod idle vs minimal JSC process peak", ours: idleRSS, anchor: minimal?.peakMiB, unit: "MiB", lowerIsBetter: true, target: 1.5)
        report.row("macrod after \(served) calls", ours: afterCallsRSS, anchor: nil, unit: "MiB", lowerIsBetter: true, target: nil)
        report.row("macrod with 50 connected clients", ours: connectedRSS, anchor: nil, unit: "MiB", lowerIsBetter: true, target: nil)
        if let redis { report.note("redis-server RSS at the end: \(format(redis.child.residentMiB)) MiB") }
        // 8. Last: strace slows a traced process down (and a detach may leave it slower), so
        // the system calls are counted after everything else was measured.
        if straceCalls > 0 {
            let ourSyscalls = try syscallsPerCall(server: macrod.child, path: macrod.socketPath, wire: ours, calls: straceCalls, directory: directory)
            let redisSyscalls = try redis.map { try syscallsPerCall(server: $0.child, path: $0.socketPath, wire: fcall, calls: straceCalls, directory: directory) }
            let nodeSyscalls = try node.map { try syscallsPerCall(server: $0.child, path: $0.socketPath, wire: ours, calls: straceCalls, directory: directory) }
            let floorSyscalls = try floorServer.map { try syscallsPerCall(server: $0.child, path: $0.socketPath, wire: ours, calls: straceCalls, directory: directory) }
            report.section("8. System calls per call, 1 client, sequential (\(straceCalls) calls under strace -c -f, all threads)")
            report.row(
                "syscalls per call vs Redis FCALL", ours: ourSyscalls, anchor: redisSyscalls,
                unit: "", lowerIsBetter: true, target: nil, absoluteTarget: 4.1)
            report.note("Node.js server: \(nodeSyscalls.map(format) ?? "n/a") per call; minimal server: \(floorSyscalls.map(format) ?? "n/a") per call.")
        }
        report.print()
    }

    /// The minimal server's own figures from a run, with its ratios to Redis (and to the bare
    /// socket, when given), so the floor can be read against the anchors too.
    private func floorNote(_ floor: LoadResult, redis: LoadResult?, bare: LoadResult?) -> String {
        var text = "minimal server \(format(floor.callsPerSecond)) calls/s"
        if let redis { text += " (\(format(floor.callsPerSecond / redis.callsPerSecond))x Redis" }
        if let bare { text += (redis == nil ? " (" : ", ") + "\(format(floor.callsPerSecond / bare.callsPerSecond))x bare socket" }
        if redis != nil || bare != nil { text += ")" }
        text += ", server CPU per call \(format(floor.serverCPUMicros)) us"
        if let redis { text += " (\(format(floor.serverCPUMicros / redis.serverCPUMicros))x Redis)" }
        return text + ", \(format(floor.serverContextSwitches)) context switches per call"
    }

    private func measureReload(macrod: Macrod, saves: Int) throws -> (p50: Double, p99: Double) {
        var times = try reloadTimes(macrod: macrod, saves: saves)
        times.sort()
        return (times[times.count / 2], times[min(times.count - 1, Int(Double(times.count) * 0.99))])
    }

    /// ``measureReload(macrod:saves:)`` for a module: the macro that imports it is not saved.
    private func measureModuleReload(macrod: Macrod, saves: Int) throws -> (p50: Double, p99: Double) {
        let lib = "\(macrod.macrosDirectory)/lib"
        try FileManager.default.createDirectory(atPath: lib, withIntermediateDirectories: true)
        try "export const V = 0;\n".write(toFile: "\(lib)/reloadmod.js", atomically: true, encoding: .utf8)
        try "import { V } from \"./lib/reloadmod.js\";\nfunction usesmod() { return V; }\n".write(
            toFile: "\(macrod.macrosDirectory)/usesmod.js", atomically: true, encoding: .utf8)
        var times = try reloadTimes(macrod: macrod, saves: saves, file: "lib/reloadmod.js", macro: "usesmod") { "export const V = \($0);\n" }
        times.sort()
        return (times[times.count / 2], times[min(times.count - 1, Int(Double(times.count) * 0.99))])
    }

    /// Wake-ups (context switches) per second and CPU percent of `server` over `seconds` of idle.
    private func idleCost(_ server: Child, seconds: Double) throws -> (wakeups: Double, cpuPercent: Double) {
        let (cpu, switches) = (server.cpuSeconds, server.contextSwitches)
        let start = monotonicSeconds()
        usleep(useconds_t(seconds * 1_000_000))
        let elapsed = monotonicSeconds() - start
        return ((server.contextSwitches - switches) / elapsed, (server.cpuSeconds - cpu) / elapsed * 100)
    }

    /// Writes `count` macros with a schedule that is not due in the bench's window; returns how
    /// many macros have triggers once they are armed.
    private func scheduleMacros(_ macrod: Macrod, count: Int) throws -> Int {
        for index in 0..<count {
            try "export const triggers = [{ cron: \"0 0 1 1 *\" }];\nexport default function s\(index)() {}\n".write(
                toFile: "\(macrod.macrosDirectory)/s\(index).js", atomically: true, encoding: .utf8)
        }
        try waitForTriggers(macrod, count: count)
        return count
    }

    /// Waits until macrod answers a call of `name` (at most 10 s).
    private func waitForMacro(_ macrod: Macrod, _ name: String) throws {
        let socket = try BlockingSocket(path: macrod.socketPath)
        let request = Macrod.call(name, "0")
        let start = monotonicSeconds()
        while monotonicSeconds() - start < 10 {
            try socket.send(request)
            if Macrod.validate(try socket.receive(BlockingSocket.line)) == nil { return }
            usleep(20_000)
        }
        throw BenchError("macrod did not load \(name) within 10 s")
    }

    /// Waits until macrod reports `count` macros with triggers (at most 10 s).
    private func waitForTriggers(_ macrod: Macrod, count: Int) throws {
        let socket = try BlockingSocket(path: macrod.socketPath)
        let request = Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.status\"}\n".utf8)
        let start = monotonicSeconds()
        while monotonicSeconds() - start < 10 {
            try socket.send(request)
            let reply = String(decoding: try socket.receive(BlockingSocket.line), as: UTF8.self)
            if reply.contains("\"triggers\":{\"macros\":\(count),") { return }
            usleep(20_000)
        }
        throw BenchError("macrod did not arm the triggers of \(count) macros within 10 s")
    }

    private func medianRun(_ executable: String, _ arguments: [String]) throws -> (seconds: Double, peakMiB: Double) {
        for _ in 0..<3 { _ = try timeProcess(executable, arguments) }
        var runs: [(Double, Double)] = []
        for _ in 0..<cliRuns {
            let run = try timeProcess(executable, arguments)
            guard run.status == 0 else { throw BenchError("\(executable) \(arguments.joined(separator: " ")) exited with status \(run.status)") }
            runs.append((run.seconds, run.peakMiB))
        }
        runs.sort { $0.0 < $1.0 }
        return runs[runs.count / 2]
    }
}

/// Saves `reloaded.js` `saves` times (write a temporary file, rename it over) and after each
/// save calls it until it returns the new version: milliseconds from write to that reply.
/// `file` (relative to the macros directory) gets `source(version)`; `macro` is the one called.
func reloadTimes(
    macrod: Macrod, saves: Int, first: Int = 1, file: String = "reloaded.js", macro: String = "reloaded",
    source: (Int) -> String = { "function () { return \($0); }\n" }
) throws -> [Double] {
    let socket = try BlockingSocket(path: macrod.socketPath)
    let request = Macrod.call(macro, "")
    var times: [Double] = []
    let path = "\(macrod.macrosDirectory)/\(file)"
    let temporary = (path as NSString).deletingLastPathComponent + "/." + (path as NSString).lastPathComponent + ".tmp"
    for version in first..<(first + saves) {
        let start = monotonicSeconds()
        try source(version).write(toFile: temporary, atomically: false, encoding: .utf8)
        rename(temporary, path)
        let expected = Array("\"result\":\(version)}".utf8)
        while true {
            try socket.send(request)
            let reply = try socket.receive(BlockingSocket.line)
            if reply.count > expected.count, Array(reply[(reply.count - 1 - expected.count)..<(reply.count - 1)]) == expected { break }
            if monotonicSeconds() - start > 5 { throw BenchError("reload: version \(version) not live after 5 s") }
        }
        times.append((monotonicSeconds() - start) * 1000)
        usleep(20_000)
    }
    return times
}

/// The folder of this executable (macrod and macro are built beside it).
func binaryDirectory() -> String {
    URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
}

/// A new directory under /tmp (short, so socket paths fit).
func makeTemporaryDirectory() throws -> String {
    var template = Array("/tmp/macro-bench-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp failed") }
    return String(cString: made)
}
