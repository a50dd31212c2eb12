import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Colours and redrawing, only when stdout is a terminal (and NO_COLOR is unset).
package enum Terminal {
    static let isInteractive = isatty(STDOUT_FILENO) == 1
    static let colours = isInteractive && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func paint(_ text: String, _ code: String) -> String { colours ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
    package static func green(_ text: String) -> String { paint(text, "32") }
    static func red(_ text: String) -> String { paint(text, "31") }
    static func dim(_ text: String) -> String { paint(text, "2") }

    /// `inner   [██████░░░░░░░░░░░░░░]  3.00`, the bar scaled to the channel's range.
    static func bars(_ values: [(String, Double)], minimum: Double = 0, maximum: Double = 10, width: Int = 30) -> [String] {
        let labelWidth = values.map(\.0.count).max() ?? 0
        return values.map { channel, value in
            let fraction = max(0, min(1, (value - minimum) / (maximum - minimum)))
            let filled = Int((fraction * Double(width)).rounded())
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            return "\(channel.padding(toLength: labelWidth, withPad: " ", startingAt: 0))  \(green(bar))  \(Console.format(value))"
        }
    }

    /// Moves the cursor up `lines` lines and clears to the end of the screen.
    static func rewind(_ lines: Int) {
        guard isInteractive, lines > 0 else { return }
        print("\u{1B}[\(lines)A\u{1B}[J", terminator: "")
    }
}
