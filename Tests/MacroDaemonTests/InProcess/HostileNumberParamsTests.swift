import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// Every param of every method, given numbers no Int holds: each request is answered (a result,
/// or an error naming the param), none is an internal error, and macrod goes on. Before, `run.get`
/// with `id: 1e20` stopped macrod (a Double-to-Int conversion trapped).
@Suite("Out-of-range numbers in every param")
struct HostileNumberParamsTests {
    /// Methods that must not run with a real name here: they would change the files, start a
    /// debug session or run code. They get each param alone.
    static let aloneOnly: Set<RPCMethod> = [.save, .delete, .rollback, .debugStart, .eval, .profile]

    @Test func everyParamOfEveryMethodAnswersHugeAndNegativeNumbers() async throws {
        let directory = TemporaryDirectory(prefix: "numbers")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        _ = try directory.write("macros/bump.js", "function bump(channel, amount) { progress.inner += 1; return progress.inner }")
        let service = try InProcessService(config: MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json")))
        let client = try await service.connect()
        var id = 0
        var answered = 0
        for method in RPCMethod.allCases {
            for key in method.paramNames ?? ["inner"] {
                for number in [1e20, -1e20, 1e300, 4_294_967_296.5, 9.3e18] {
                    var variants: [MacroValue] = [.object([key: .number(number)])]
                    if !Self.aloneOnly.contains(method), key != "name", method.paramNames?.contains("name") == true {
                        variants.append(.object(["name": "bump", key: .number(number)]))
                    }
                    for params in variants {
                        id += 1
                        let reply = try await client.call(method, params, id: id)
                        #expect(reply["id"] == .number(Double(id)), "\(method.rawValue) \(params): \(reply)")
                        #expect(reply["error"]["code"] != .number(Double(RPCError.internalError)), "\(method.rawValue) \(params): \(reply)")
                        answered += 1
                    }
                }
            }
        }
        #expect(answered > 300)
        id += 1
        #expect(try await client.call(.call, ["name": "bump"], id: id)["result"].intValue != nil)
    }
}
