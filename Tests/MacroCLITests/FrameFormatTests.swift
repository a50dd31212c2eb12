import Testing

@testable import MacroCLI

/// The CLI prints JavaScriptCore's stack lines as Node does: `NAME (file:line:column)`, and a
/// frame without a name as `<anonymous>`, never a bare location.
@Suite("Stack lines in the CLI")
struct FrameFormatTests {
    @Test(arguments: [
        ("bump@/m/bump.js:5:29", "bump (/m/bump.js:5:29)"),
        ("/m/nat.js:7:16", "<anonymous> (/m/nat.js:7:16)"),
        ("@/m/nat.js:7:16", "<anonymous> (/m/nat.js:7:16)"),
        ("map@[native code]", "map ([native code])"),
        ("[native code]", "<anonymous> ([native code])"),
        ("global code@/m/lib/a.js:5:1", "global code (/m/lib/a.js:5:1)"),
    ])
    func framesAreNamed(frame: String, shown: String) {
        #expect(Console.formatFrame(frame) == shown)
    }
}

/// What `macro store NAME` prints of a key: as it is, or JSON-quoted when it holds control
/// characters, so that a key cannot drive the terminal.
@Suite("Store keys on a terminal")
struct StoreKeyDisplayTests {
    @Test func keysWithControlCharactersAreQuoted() {
        #expect(StoreCommand.printable("count") == "count")
        #expect(StoreCommand.printable("é ✓") == "é ✓")
        #expect(StoreCommand.printable("\u{1b}[2Jwiped") == #""\u001b[2Jwiped""#)
        #expect(StoreCommand.printable("a\u{0}b") == #""a\u0000b""#)
        #expect(StoreCommand.printable("\u{9b}31m") == "\"\u{9b}31m\"")
    }
}
