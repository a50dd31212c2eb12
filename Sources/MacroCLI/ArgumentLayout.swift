/// Puts a subcommand's command line in the shape swift-argument-parser reads without surprises:
/// its options first, then `--`, then the positional values. So a negative number is a value
/// (`macro set inner -2`, `macro run bump inner -2.5`), a `--` the user wrote is not passed on
/// to the macro (`macro run bump inner -- -2.5`), and an unknown option before the user's `--`
/// stays an option, which the parser rejects as a usage error (`macro run bump --bogus`).
enum ArgumentLayout {
    /// Options that take a value as the next word. (Arrays, not sets, here: a `Set<String>` costs
    /// its generic metadata at each start of `macro`, measurable on `macro run`.)
    static let optionsWithValue: [String] = [
        "--socket", "--config", "--macros", "--state", "--timeout-ms", "--wait-ms", "--lines", "--runs", "--format", "--output", "--event", "--limit", "--name", "--kind",
    ]

    /// True for `-2`, `-2.5`, `-.5`, `-1e3`: a value, not an option.
    static func isNegativeNumber(_ word: String) -> Bool {
        guard word.hasPrefix("-"), word.count > 1 else { return false }
        let rest = word.dropFirst()
        guard let first = rest.first, first.isNumber || (first == "." && rest.dropFirst().first?.isNumber == true) else { return false }
        return Double(word) != nil
    }

    /// Options every command takes, which may also come before the command's name
    /// (`macro --socket S run bump`), as README promises.
    static let leadingOptions: [String] = ["--socket", "--config"]

    /// `arguments` (without the program name) rearranged when they start with one of `subcommands`
    /// (after any of ``leadingOptions`` and `--json`, which move behind it).
    static func arrange(_ arguments: [String], subcommands: [String]) -> [String] {
        var leading: [String] = [], rest = arguments[...]
        while let word = rest.first {
            let name = String(word.split(separator: "=", maxSplits: 1).first ?? "")
            if leadingOptions.contains(name) {
                if word.contains("=") { leading.append(word); rest = rest.dropFirst(); continue }
                guard rest.count >= 2 else { break }
                leading += Array(rest.prefix(2))
                rest = rest.dropFirst(2)
            } else if word == "--json" {
                leading.append(word)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        if !leading.isEmpty, let command = rest.first, subcommands.contains(command) {
            return arrange([command] + leading + Array(rest.dropFirst()), subcommands: subcommands)
        }
        guard let command = arguments.first, subcommands.contains(command) else { return arguments }
        var options: [String] = [], values: [String] = []
        var index = 1
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if word == "--" {
                values += arguments[index...]
                break
            }
            if word.hasPrefix("-"), word != "-", !isNegativeNumber(word) {
                if optionsWithValue.contains(word), index < arguments.count {
                    // One word, so a value starting with '-' (`--timeout-ms -5`) stays its value.
                    options.append(word + "=" + arguments[index])
                    index += 1
                } else {
                    options.append(word)
                }
            } else {
                values.append(word)
            }
        }
        return [command] + options + (values.isEmpty ? [] : ["--"] + values)
    }

    /// The word of `candidates` nearest to `word` (edit distance at most 2), for "did you mean".
    static func nearest(_ word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= max(2, word.count / 3) }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(1, b.count) where j <= b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
