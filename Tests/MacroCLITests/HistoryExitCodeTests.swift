import MacroRPC
import Testing

@testable import MacroCLI

/// The history's errors as exit codes (docs/cli.md, "Exit codes").
@Suite("History error exit codes")
struct HistoryExitCodeTests {
    @Test func aDamagedVersionIsADataErrorAndARollbackConflictIsTemporary() {
        let corrupt = RPCError(code: RPCError.internalError, message: "bump@2: its content does not match its hash", data: ["reason": "corrupt"])
        #expect(DaemonLink.exitCode(for: corrupt) == 74)
        let conflict = RPCError(code: RPCError.internalError, message: "bump: the file was changed", data: ["reason": "conflict"])
        #expect(DaemonLink.exitCode(for: conflict) == 75)
        #expect(DaemonLink.exitCode(for: RPCError(code: RPCError.internalError, message: "other")) == 70)
    }
}
