/// A unified diff of two texts, line by line (`diff -u`'s format, three lines of context), for
/// `macro.diff`. The common start and end are cut first; the rest is a longest common
/// subsequence, or, past four million line pairs, the whole middle replaced.
enum LineDiff {
    private enum Edit: Equatable {
        case same(String), removed(String), added(String)

        var isSame: Bool { if case .same = self { true } else { false } }
        var isAdded: Bool { if case .added = self { true } else { false } }
        var isRemoved: Bool { if case .removed = self { true } else { false } }
    }

    /// The diff of `old` and `new` under the headers `--- oldLabel` and `+++ newLabel`; empty
    /// when the texts are equal.
    static func unified(_ old: String, _ new: String, oldLabel: String, newLabel: String, context: Int = 3) -> String {
        let a = lines(old), b = lines(new)
        guard a != b else { return "" }
        let edits = self.edits(a, b)
        var out = "--- \(oldLabel)\n+++ \(newLabel)\n"
        // Hunks: runs of changes with up to `context` unchanged lines around them.
        var index = 0
        let changed = edits.indices.filter { !edits[$0].isSame }
        var oldLine = Array(repeating: 0, count: edits.count + 1), newLine = oldLine
        for (i, edit) in edits.enumerated() {
            oldLine[i + 1] = oldLine[i] + (edit.isAdded ? 0 : 1)
            newLine[i + 1] = newLine[i] + (edit.isRemoved ? 0 : 1)
        }
        while index < changed.count {
            let start = max(0, changed[index] - context)
            var end = min(edits.count, changed[index] + context + 1)
            index += 1
            while index < changed.count, changed[index] - context <= end {
                end = min(edits.count, changed[index] + context + 1)
                index += 1
            }
            let oldCount = oldLine[end] - oldLine[start], newCount = newLine[end] - newLine[start]
            out += "@@ -\(range(oldLine[start], oldCount)) +\(range(newLine[start], newCount)) @@\n"
            for edit in edits[start..<end] {
                switch edit {
                case .same(let line): out += " \(line)\n"
                case .removed(let line): out += "-\(line)\n"
                case .added(let line): out += "+\(line)\n"
                }
            }
        }
        return out
    }

    /// `diff -u`'s range: `start,count`, the start one-based (the line before, for none).
    private static func range(_ before: Int, _ count: Int) -> String {
        count == 1 ? "\(before + 1)" : "\(count == 0 ? before : before + 1),\(count)"
    }

    private static func lines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    private static func edits(_ a: [String], _ b: [String]) -> [Edit] {
        var prefix = 0
        while prefix < a.count, prefix < b.count, a[prefix] == b[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix, suffix < b.count - prefix, a[a.count - 1 - suffix] == b[b.count - 1 - suffix] { suffix += 1 }
        let x = Array(a[prefix..<(a.count - suffix)]), y = Array(b[prefix..<(b.count - suffix)])
        var middle: [Edit] = []
        if x.count * y.count > 4_000_000 {
            middle = x.map { .removed($0) } + y.map { .added($0) }
        } else {
            // lengths[i][j]: the longest common subsequence of x[i...] and y[j...].
            let width = y.count + 1
            var lengths = [Int](repeating: 0, count: (x.count + 1) * width)
            for i in stride(from: x.count - 1, through: 0, by: -1) {
                for j in stride(from: y.count - 1, through: 0, by: -1) {
                    lengths[i * width + j] = x[i] == y[j] ? lengths[(i + 1) * width + j + 1] + 1 : max(lengths[(i + 1) * width + j], lengths[i * width + j + 1])
                }
            }
            var i = 0, j = 0
            while i < x.count || j < y.count {
                if i < x.count, j < y.count, x[i] == y[j] {
                    middle.append(.same(x[i]))
                    i += 1
                    j += 1
                } else if j < y.count, i == x.count || lengths[i * width + j + 1] >= lengths[(i + 1) * width + j] {
                    middle.append(.added(y[j]))
                    j += 1
                } else {
                    middle.append(.removed(x[i]))
                    i += 1
                }
            }
        }
        // diff -u lists a change's removed lines before its added ones.
        var ordered: [Edit] = []
        var removed: [Edit] = [], added: [Edit] = []
        for edit in middle {
            switch edit {
            case .same:
                ordered += removed + added
                removed = []
                added = []
                ordered.append(edit)
            case .removed: removed.append(edit)
            case .added: added.append(edit)
            }
        }
        ordered += removed + added
        return a[..<prefix].map { .same($0) } + ordered + a[(a.count - suffix)...].map { .same($0) }
    }
}
