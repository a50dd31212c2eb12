import Foundation
import MacroBase

#if canImport(Glibc)
import Glibc
#endif

/// A small line editor for the REPL: arrows, Home/End, Ctrl-A/E/U/K/W/L, history (Up/Down),
/// Ctrl-C (the read is interrupted: the REPL clears its input), Ctrl-D (end on an empty line).
/// On a non-terminal stdin it reads plain lines.
package final class LineEditor {
    /// What one read gave.
    package enum Read: Equatable {
        /// A line (without its line break).
        case line(String)
        /// Ctrl-C: the line typed so far is dropped.
        case interrupted
        /// End of input (Ctrl-D on an empty line).
        case end
    }

    private(set) var history: [String] = []
    private let historyFile: String?
    private let interactive = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1

    /// An editor whose history is read from, and saved to, `historyFile`.
    package init(historyFile: String?) {
        self.historyFile = historyFile
        if let historyFile, let text = try? String(contentsOfFile: historyFile, encoding: .utf8) {
            history = text.split(separator: "\n").map(String.init).suffix(500).map { $0 }
        }
    }

    /// Reads one line.
    package func readLine(prompt: String) -> Read {
        guard interactive else {
            return Swift.readLine(strippingNewline: true).map { .line($0) } ?? .end
        }
        var original = termios()
        tcgetattr(STDIN_FILENO, &original)
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &raw)
        defer { tcsetattr(STDIN_FILENO, TCSADRAIN, &original) }

        var line: [Character] = []
        var cursor = 0
        var index = history.count
        var saved: [Character] = []
        func redraw() {
            write("\r\u{1B}[K" + prompt + String(line))
            let back = line.count - cursor
            if back > 0 { write("\u{1B}[\(back)D") }
        }
        write(prompt)
        while true {
            guard let byte = readByte() else { return .end }
            switch byte {
            case 13, 10:  // Enter
                write("\r\n")
                let text = String(line)
                if !text.trimmingCharacters(in: .whitespaces).isEmpty, history.last != text {
                    history.append(text)
                    // Saved at once, so every way out (Ctrl-D, .exit, a signal, a crash) keeps it.
                    save()
                }
                return .line(text)
            case 3:  // Ctrl-C
                write("^C\r\n")
                return .interrupted
            case 4:  // Ctrl-D
                if line.isEmpty { write("\r\n"); return .end }
                if cursor < line.count { line.remove(at: cursor); redraw() }
            case 127, 8:  // Backspace
                if cursor > 0 { line.remove(at: cursor - 1); cursor -= 1; redraw() }
            case 1: cursor = 0; redraw()  // Ctrl-A
            case 5: cursor = line.count; redraw()  // Ctrl-E
            case 21: line.removeSubrange(0..<cursor); cursor = 0; redraw()  // Ctrl-U
            case 11: line.removeSubrange(cursor...); redraw()  // Ctrl-K
            case 12: write("\u{1B}[H\u{1B}[2J"); redraw()  // Ctrl-L
            case 23:  // Ctrl-W
                var start = cursor
                while start > 0, line[start - 1] == " " { start -= 1 }
                while start > 0, line[start - 1] != " " { start -= 1 }
                line.removeSubrange(start..<cursor); cursor = start; redraw()
            case 27:  // Escape sequences: arrows, Home/End, Delete
                guard let b1 = readByte(), b1 == UInt8(ascii: "["), let b2 = readByte() else { continue }
                switch b2 {
                case UInt8(ascii: "A"):  // Up
                    if index == history.count { saved = line }
                    if index > 0 { index -= 1; line = Array(history[index]); cursor = line.count; redraw() }
                case UInt8(ascii: "B"):  // Down
                    if index < history.count {
                        index += 1
                        line = index == history.count ? saved : Array(history[index])
                        cursor = line.count; redraw()
                    }
                case UInt8(ascii: "C"): if cursor < line.count { cursor += 1; redraw() }
                case UInt8(ascii: "D"): if cursor > 0 { cursor -= 1; redraw() }
                case UInt8(ascii: "H"): cursor = 0; redraw()
                case UInt8(ascii: "F"): cursor = line.count; redraw()
                case UInt8(ascii: "3"): _ = readByte(); if cursor < line.count { line.remove(at: cursor); redraw() }
                default: break
                }
            default:
                guard byte >= 32 else { continue }
                var bytes = [byte]
                let extra = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : 0
                for _ in 0..<extra { if let b = readByte() { bytes.append(b) } }
                for character in String(decoding: bytes, as: UTF8.self) { line.insert(character, at: cursor); cursor += 1 }
                redraw()
            }
        }
    }

    /// Writes the history file (the last 500 entries).
    package func save() {
        guard let historyFile, !history.isEmpty else { return }
        try? AtomicFileWriter.write(history.suffix(500).joined(separator: "\n") + "\n", to: historyFile)
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(STDIN_FILENO, &byte, 1)
            if n == 1 { return byte }
            if n < 0, errno == EINTR { continue }
            return nil
        }
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// Writes a text file atomically (for the REPL history).
enum AtomicFileWriter {
    static func write(_ text: String, to path: String) throws {
        try AtomicFile.write(Data(text.utf8), to: path, mode: 0o600, durable: false)
    }
}
