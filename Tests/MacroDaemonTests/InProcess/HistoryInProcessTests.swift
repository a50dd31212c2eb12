import Foundation
import Logging
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

@testable import MacroDaemon

/// The version history and the audit log through the methods, in-process: `macro.rollback`,
/// `macro.diff`, `macro.history`, `audit.recent`, and who each save is recorded as.
@Suite("Version history and audit log in-process")
struct HistoryInProcessTests {
    /// A service over a temporary macros directory holding `files`.
    private static func service(_ files: [String: String], configure: (inout MacroConfig) -> Void = { _ in }) throws -> (InProcessService, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "history")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        for (name, text) in files { _ = try directory.write("macros/\(name)", text) }
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        config.memoryLimitMB = 128
        configure(&config)
        return (try InProcessService(config: config), directory)
    }

    private static func hash(_ text: String) -> MacroValue { .string(SHA256.hex(Array(text.utf8))) }

    @Test func rollbackRestoresAVersionSavedThreeSavesEarlier() async throws {
        let (service, directory) = try Self.service([:])
        let client = try await service.connect(peer: PeerCredentials(pid: 77, uid: 1000, gid: 1000))
        let sources = (1...4).map { "function level() { return \($0) }\n" }
        for (n, source) in sources.enumerated() {
            #expect(try await client.call(.save, ["name": "level", "source": .string(source)], id: n + 1)["result"]["version"] == .number(Double(n + 1)))
        }
        let rolled = try await client.call(.rollback, ["name": "level", "version": 1], id: 10)
        #expect(
            rolled["result"] == [
                "name": "level", "file": .string(directory.url("macros/level.js")), "restored": 1, "version": 5, "unchanged": false,
            ])
        #expect(try directory.read("macros/level.js") == sources[0])
        #expect(try await client.call(.call, ["name": "level"], id: 11)["result"] == 1)
        let history = try await client.call(.history, ["name": "level"], id: 12)["result"]
        #expect(history["current"] == 5)
        #expect(history["versions"].arrayValue?.map { $0["version"] } == [1, 2, 3, 4, 5])
        #expect(history["versions"].arrayValue?.map { $0["hash"] } == (sources + [sources[0]]).map(Self.hash))
        #expect(history["versions"][4]["who"] == "socket uid 1000 pid 77 (rollback to 1)")
        let audit = try await client.call(.auditRecent, ["name": "level", "kind": "rollback"], id: 13)["result"]
        #expect(audit.arrayValue?.count == 1)
        #expect(audit[0]["who"] == ["surface": "socket", "uid": 1000, "pid": 77])
        #expect(audit[0]["before"] == Self.hash(sources[3]))
        #expect(audit[0]["after"] == Self.hash(sources[0]))
        #expect(audit[0]["version"] == 5)
        #expect(audit[0]["details"] == ["restored": 1])
    }

    @Test func aRollbackToAVersionThatNoLongerLoadsIsRefusedAndTheCurrentVersionKeepsServing() async throws {
        let (service, directory) = try Self.service(["lib/math.js": "export function double(x) { return 2 * x }\n"])
        let client = try await service.connect()
        let first = "import { double } from \"./lib/math.js\";\nexport default function twice() { return double(21) }\n"
        let third = "function twice() { return 3 }\n"
        _ = try await client.call(.save, ["name": "twice", "source": .string(first)], id: 1)
        #expect(try await client.call(.call, ["name": "twice"], id: 2)["result"] == 42)
        _ = try await client.call(.save, ["name": "twice", "source": "function twice() { return 2 }\n"], id: 3)
        _ = try await client.call(.save, ["name": "twice", "source": .string(third)], id: 4)
        // The global version 1 used is gone: lib/math.js no longer exports `double`.
        _ = try directory.write("macros/lib/math.js", "export function triple(x) { return 3 * x }\n")
        service.environment.library.refreshLib()

        let refused = try await client.call(.rollback, ["name": "twice", "version": 1], id: 5)
        #expect(
            refused["error"] == [
                "code": .number(Double(RPCError.syntaxError)), "message": "'./lib/math.js' has no export named 'double' (it exports: triple)",
                "data": [
                    "name": "twice", "message": "'./lib/math.js' has no export named 'double' (it exports: triple)",
                    "file": .string(directory.url("macros/twice.js")), "line": 1, "column": 10,
                ],
            ])
        #expect(try directory.read("macros/twice.js") == third)
        #expect(try await client.call(.call, ["name": "twice"], id: 6)["result"] == 3)
        #expect(try await client.call(.history, ["name": "twice"], id: 7)["result"]["current"] == 3)
        #expect(try await client.call(.auditRecent, ["kind": "rollback"], id: 8)["result"] == [])
    }

    @Test(.timeLimit(.minutes(10))) func theAuditLogRecordsASocketSaveADashboardSaveAndAnEditorSaveInOrder() async throws {
        let (service, directory) = try Self.service([:])
        let socket = try await service.connect(peer: PeerCredentials(pid: 4242, uid: 1234, gid: 1234))
        let dashboard = try await service.dashboard()
        let watcher = try await service.connect()
        _ = try await watcher.call(.subscribe, ["events": ["macros"]], id: 1)
        let watch = MacrosWatchService(
            library: service.environment.library, loop: service.environment.engine.eventLoop, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try watch.start()
        defer { watch.stop() }

        let versions = ["function note() { return 'socket' }\n", "function note() { return 'dashboard' }\n", "function note() { return 'editor' }\n"]
        #expect(try await socket.call(.save, ["name": "note", "source": .string(versions[0])], id: 1)["result"]["version"] == 1)
        #expect(try await dashboard.call(.save, ["name": "note", "source": .string(versions[1])], id: 1)["result"]["version"] == 2)
        // An editor writes the file: the watcher loads it.
        _ = try directory.write("macros/note.js", versions[2])
        while true {
            let message = try await watcher.next()
            if message["method"] == "macro.loaded", message["params"]["name"] == "note", message["params"]["version"] == 3 { break }
        }

        let events = try await socket.call(.auditRecent, ["name": "note"], id: 2)["result"].arrayValue ?? []
        #expect(events.map { $0["kind"] } == ["save", "save", "save"])
        #expect(events[0]["who"] == ["surface": "socket", "uid": 1234, "pid": 4242])
        #expect(events[1]["who"]["surface"] == "dashboard")
        #expect(events[1]["who"]["session"].intValue != nil)
        #expect(events[2]["who"] == ["surface": "file", "uid": .number(Double(getuid()))])
        #expect(events.map { $0["before"] } == [.undefined, Self.hash(versions[0]), Self.hash(versions[1])])
        #expect(events.map { $0["after"] } == versions.map(Self.hash))
        #expect(events.map { $0["version"] } == [1, 2, 3])
        #expect(events.map { $0["seq"].intValue ?? 0 } == events.map { $0["seq"].intValue ?? 0 }.sorted())
        let history = try await socket.call(.history, ["name": "note"], id: 3)["result"]["versions"]
        #expect(
            history.arrayValue?.map { $0["who"] } == [
                "socket uid 1234 pid 4242", .string("dashboard session \(events[1]["who"]["session"].intValue ?? 0)"), .string("file uid \(getuid())"),
            ])
    }

    @Test func theDiffOfTwoVersionsAndOfAVersionAgainstTheFileNow() async throws {
        let (service, directory) = try Self.service([:])
        let client = try await service.connect()
        _ = try await client.call(.save, ["name": "ramp", "source": "function ramp() {\n  progress.inner = 1;\n  return 1;\n}\n"], id: 1)
        _ = try await client.call(.save, ["name": "ramp", "source": "function ramp() {\n  progress.inner = 2;\n  return 2;\n}\n"], id: 2)
        let diff = try await client.call(.diff, ["name": "ramp", "from": 1, "to": 2], id: 3)["result"]
        #expect(diff["to"] == 2)
        #expect(
            diff["diff"] == """
                --- ramp@1
                +++ ramp@2
                @@ -1,4 +1,4 @@
                 function ramp() {
                -  progress.inner = 1;
                -  return 1;
                +  progress.inner = 2;
                +  return 2;
                 }

                """)
        // Against the file as it is now (edited on disk, not loaded).
        _ = try directory.write("macros/ramp.js", "function ramp() {\n  progress.inner = 2;\n  return 2;\n}\n// note\n")
        let current = try await client.call(.diff, ["name": "ramp", "from": 2], id: 4)["result"]
        #expect(current["to"] == "current")
        #expect(current["diff"] == "--- ramp@2\n+++ ramp (current)\n@@ -2,3 +2,4 @@\n   progress.inner = 2;\n   return 2;\n }\n+// note\n")
        let missing = try await client.call(.diff, ["name": "ramp", "from": 9], id: 5)["error"]
        #expect(missing == ["code": .number(Double(RPCError.noSuchMacro)), "message": "ramp has no version 9 (kept: 1 to 2)"])
    }

    @Test func deletesProgressSetsAndLibFilesAreRecordedAndCounted() async throws {
        let (service, directory) = try Self.service(["lib/rings.js": "function clampRing(v) { return Math.min(10, v) }\n", "gone.js": "function gone() {}\n"])
        let client = try await service.connect(peer: PeerCredentials(pid: 9, uid: 1000, gid: 1000))
        // What the first load found is kept, without an audit event.
        #expect(try await client.call(.history, ["name": "lib/rings"], id: 1)["result"]["versions"].arrayValue?.count == 1)
        #expect(try await client.call(.auditRecent, id: 2)["result"] == [])
        _ = try await client.call(.delete, ["name": "gone"], id: 3)
        _ = try await client.call(.progressSet, ["outer": 4], id: 4)
        let events = try await client.call(.auditRecent, id: 5)["result"].arrayValue ?? []
        #expect(events.map { $0["kind"] } == ["delete", "progressSet"])
        #expect(events[0]["name"] == "gone")
        #expect(events[0]["before"] == Self.hash("function gone() {}\n"))
        #expect(events[1]["details"] == ["values": ["outer": 4]])
        #expect(events[1]["who"] == ["surface": "socket", "uid": 1000, "pid": 9])
        let metrics = String(decoding: try await service.host.metricsText(on: service.environment.engine.eventLoop).get(), as: UTF8.self)
        #expect(metrics.contains("macroengine_audit_events_total{kind=\"delete\"} 1"))
        #expect(metrics.contains("macroengine_audit_events_total{kind=\"progressSet\"} 1"))
        // A lib file an editor changes is a new version too, saved from a file.
        let rings = "function clampRing(v) { return Math.max(0, Math.min(10, v)) }\n"
        _ = try directory.write("macros/lib/rings.js", rings)
        service.environment.library.refreshLib()
        let libHistory = try await client.call(.history, ["name": "lib/rings"], id: 6)["result"]
        #expect(libHistory["current"] == 2)
        #expect(libHistory["versions"][1]["who"] == .string("file uid \(getuid())"))
        #expect(libHistory["versions"][1]["hash"] == Self.hash(rings))
        let libSave = try await client.call(.auditRecent, ["name": "lib/rings"], id: 7)["result"]
        #expect(libSave.arrayValue?.map { $0["kind"] } == ["save"])
        #expect(libSave[0]["version"] == 2)
        // The store's edits from outside have their kind (recorded by the store's methods).
        let edit = service.host.history.audit.record(.storeEdit, by: AuditActor(.socket, uid: 1000, pid: 9), name: "counter", details: ["key": "n"])
        #expect(edit.json["kind"] == "storeEdit")
        #expect(edit.seq == 4)
    }

    @Test func retentionFromTheConfigBoundsAMacrosHistory() async throws {
        let (service, _) = try Self.service([:]) { $0.historyVersions = 2 }
        let client = try await service.connect()
        for n in 1...4 { _ = try await client.call(.save, ["name": "bump", "source": .string("function bump() { return \(n) }")], id: n) }
        let history = try await client.call(.history, ["name": "bump"], id: 9)["result"]
        #expect(history["versions"].arrayValue?.map { $0["version"] } == [3, 4])
        let gone = try await client.call(.rollback, ["name": "bump", "version": 1], id: 10)["error"]
        #expect(gone == ["code": .number(Double(RPCError.noSuchMacro)), "message": "bump has no version 1 (kept: 3 to 4)"])
    }

    @Test func anUnquarantineIsRecordedWithItsFileAndStalls() async throws {
        let source = "function wedge() { return 1 }\n"
        let (service, directory) = try Self.service(["wedge.js": source])
        var list = Quarantine()
        list.add(directory.url("macros/wedge.js"), hash: Quarantine.hash(Array(source.utf8)), stuckMilliseconds: 2500, macro: "wedge")
        service.environment.library.setQuarantine(list)
        let client = try await service.connect(peer: PeerCredentials(pid: 5, uid: 1000, gid: 1000))
        #expect(try await client.call(.unquarantine, ["name": "wedge"], id: 1)["result"]["status"] == "ok")
        let events = try await client.call(.auditRecent, ["kind": "unquarantine"], id: 2)["result"]
        #expect(events.arrayValue?.count == 1)
        #expect(events[0]["name"] == "wedge")
        #expect(events[0]["who"] == ["surface": "socket", "uid": 1000, "pid": 5])
        #expect(events[0]["after"] == Self.hash(source))
        #expect(events[0]["details"] == ["file": .string(directory.url("macros/wedge.js")), "stalls": 1])
    }

    @Test func aConfigReloadIsRecordedAndAppliesTheNewBounds() async throws {
        let (service, directory) = try Self.service([:])
        let file = try directory.write("macroengine.yaml", "history_versions: 7\naudit_entries: 50\n")
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let watch = MacrosWatchService(library: service.environment.library, loop: service.environment.engine.eventLoop, logger: logger)
        let reload = ConfigReloadService(configFile: file, config: service.environment.config, host: service.host, watch: watch, logger: logger)
        await reload.reload()
        #expect(service.host.history.versions.limits == HistoryLimits(versions: 7, bytes: 32 << 20))
        #expect(service.host.history.audit.limit == 50)
        _ = try directory.write("macroengine.yaml", "history_versions: 0\n")
        await reload.reload()
        #expect(service.host.history.versions.limits.versions == 7)
        let events = service.host.history.audit.recent(kind: .configReload)
        #expect(events.map(\.actor) == [AuditActor(.signal), AuditActor(.signal)])
        #expect(events[0].details == ["file": .string(file), "ok": true])
        #expect(events[1].details?["ok"] == false)
        #expect(events[1].details?["error"].stringValue?.contains("history_versions") == true)
    }

    @Test func savesAndDeletesAreAuditedWhenTheHistoryCannotKeepVersions() async throws {
        let directory = TemporaryDirectory(prefix: "history")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.url("elsewhere"), withIntermediateDirectories: true)
        // STATE.history a symlink: the history is off.
        try FileManager.default.createSymbolicLink(atPath: directory.url("state.json.history"), withDestinationPath: directory.url("elsewhere"))
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        config.memoryLimitMB = 128
        let service = try InProcessService(config: config)
        let client = try await service.connect(peer: PeerCredentials(pid: 3, uid: 1000, gid: 1000))
        let sources = ["function off() { return 1 }\n", "function off() { return 2 }\n"]
        for (n, source) in sources.enumerated() { _ = try await client.call(.save, ["name": "off", "source": .string(source)], id: n + 1) }
        _ = try await client.call(.delete, ["name": "off"], id: 3)
        let events = try await client.call(.auditRecent, ["name": "off"], id: 4)["result"].arrayValue ?? []
        #expect(events.map { $0["kind"] } == ["save", "save", "delete"])
        #expect(events.map { $0["before"] } == [.undefined, Self.hash(sources[0]), Self.hash(sources[1])])
        #expect(events.map { $0["after"] } == [Self.hash(sources[0]), Self.hash(sources[1]), .undefined])
        #expect(events.map { $0["version"] } == [.undefined, .undefined, .undefined])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("elsewhere")) == [])
    }

    @Test func anotherWritersContentLoadedDuringARollbackIsItsSaveNotTheRollback() async throws {
        let (service, directory) = try Self.service([:])
        let client = try await service.connect(peer: PeerCredentials(pid: 8, uid: 1000, gid: 1000))
        let first = "function race() { return 1 }\n", editor = "function race() { return 'editor' }\n"
        _ = try await client.call(.save, ["name": "race", "source": .string(first)], id: 1)
        _ = try await client.call(.save, ["name": "race", "source": "function race() { return 2 }\n"], id: 2)
        let library = service.environment.library
        // The rollback wrote version 1; an editor's rename-save lands before the load.
        let (_, recorded) = service.host.history.acting(
            as: AuditActor(.socket, uid: 1000, pid: 8), kind: .rollback, details: ["restored": 1], expecting: SHA256.hex(Array(first.utf8))
        ) {
            _ = try? directory.write("macros/race.js", editor)
            library.load(file: directory.url("macros/race.js"))
        }
        #expect(recorded == [])
        let events = service.host.history.audit.recent(name: "race")
        #expect(events.map(\.kind) == [.save, .save, .save])
        #expect(events.last?.actor == AuditActor(.file, uid: getuid()))
        #expect(events.last?.after == SHA256.hex(Array(editor.utf8)))
        #expect(service.host.history.versions.latest(of: "race")?.who == "file uid \(getuid())")
    }

    @Test func theDiffTakesCurrentAsItsReplySpellsIt() async throws {
        let (service, directory) = try Self.service([:])
        defer { withExtendedLifetime(directory) {} }
        let client = try await service.connect()
        _ = try await client.call(.save, ["name": "ramp", "source": "function ramp() { return 1 }\n"], id: 1)
        let reply = try await client.call(.diff, ["name": "ramp", "from": 1, "to": "current"], id: 2)["result"]
        #expect(reply == ["name": "ramp", "from": 1, "to": "current", "diff": ""])
        #expect(try await client.call(.diff, ["name": "ramp", "from": 1], id: 3)["result"] == reply)
        #expect(try await client.call(.diff, ["name": "ramp", "from": 1, "to": .null], id: 4)["result"] == reply)
    }

    @Test func everyLibFileTheHistoryKeepsCanBeAskedForByName() async throws {
        let long = String(repeating: "k", count: 200)
        let files = ["lib/constructor.js": "var a = 1\n", "lib/new.js": "var b = 2\n", "lib/\(long).js": "var c = 3\n", "lib/my-helper.js": "var d = 4\n"]
        let (service, directory) = try Self.service(files)
        defer { withExtendedLifetime(directory) {} }
        let client = try await service.connect()
        for (n, name) in ["lib/constructor", "lib/new", "lib/\(long)", "lib/my-helper"].enumerated() {
            let history = try await client.call(.history, ["name": .string(name)], id: n + 1)
            #expect(history["result"]["current"] == 1, "\(history)")
            #expect(try await client.call(.diff, ["name": .string(name), "from": 1], id: n + 10)["result"]["diff"] == "", "\(name)")
        }
        let refused = try await client.call(.history, ["name": .string(String(repeating: "m", count: 129))], id: 20)["error"]
        #expect(refused["code"] == .number(Double(RPCError.invalidParams)))
        #expect(
            refused["message"]
                == .string(
                    "Invalid params: name '\(String(repeating: "m", count: 129))' is not a macro name (an identifier of at most 128 characters, not a reserved word) or lib/NAME (a lib file's name without .js)"
                ))
        #expect(try await client.call(.history, ["name": "lib/.hidden"], id: 21)["error"]["code"] == .number(Double(RPCError.invalidParams)))
    }
}
