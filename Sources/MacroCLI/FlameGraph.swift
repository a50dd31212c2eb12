import Foundation
import MacroBase

/// Renders folded stacks (`a;b;c COUNT` lines) as a self-contained SVG flame graph (a tooltip
/// per frame, a Search button that highlights matching frames) or a Chrome `.cpuprofile` (the
/// samples one interval apart, grouped by stack; DevTools and speedscope open it).
enum FlameGraph {
    /// A call tree node: its frame, its inclusive samples, its children by frame.
    final class Node {
        let name: String
        var count = 0
        var children: [String: Node] = [:]
        var order: [String] = []
        init(name: String) { self.name = name }

        func child(_ name: String) -> Node {
            if let node = children[name] { return node }
            let node = Node(name: name)
            children[name] = node
            order.append(name)
            return node
        }
    }

    /// The tree of `folded` under a root named `root`.
    static func tree(_ folded: String, root: String) -> Node {
        let top = Node(name: root)
        for line in folded.split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let count = Int(line[line.index(after: space)...]) else { continue }
            top.count += count
            var node = top
            for frame in line[..<space].split(separator: ";") {
                node = node.child(String(frame))
                node.count += count
            }
        }
        return top
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// The SVG: the root at the bottom, callees above, widths proportional to samples.
    static func svg(_ folded: String, title: String) -> String {
        let root = tree(folded, root: "all")
        let width = 1200.0, rowHeight = 17.0
        var depth = 0
        func measure(_ node: Node, _ level: Int) {
            depth = max(depth, level)
            for name in node.order { measure(node.children[name]!, level + 1) }
        }
        measure(root, 0)
        let height = Double(depth + 1) * rowHeight + 50
        var rects = ""
        func draw(_ node: Node, x: Double, level: Int) {
            let w = root.count == 0 ? width - 20 : (width - 20) * Double(node.count) / Double(root.count)
            guard w >= 0.1 else { return }
            let y = height - 10 - Double(level + 1) * rowHeight
            let percent = root.count == 0 ? 0 : Double(node.count) * 100 / Double(root.count)
            var hash = 0
            for scalar in node.name.unicodeScalars { hash = (hash &* 31 &+ Int(scalar.value)) & 0xFFFF }
            let colour = "rgb(\(205 + hash % 50),\(80 + hash % 120),\(40 + hash % 40))"
            let label = escape(node.name)
            let chars = Int(w / 7)
            let shown = chars < 3 ? "" : (node.name.count <= chars ? label : escape(String(node.name.prefix(chars - 2))) + "..")
            rects +=
                "<g class=\"f\"><title>\(label) (\(node.count) samples, \(String(format: "%.2f", percent))%)</title>"
                + "<rect x=\"\(String(format: "%.1f", x))\" y=\"\(y)\" width=\"\(String(format: "%.1f", w))\" height=\"\(rowHeight - 1)\" fill=\"\(colour)\" rx=\"2\"/>"
                + "<text x=\"\(String(format: "%.1f", x + 3))\" y=\"\(y + 12)\">\(shown)</text></g>\n"
            var offset = x
            for name in node.order {
                let child = node.children[name]!
                draw(child, x: offset, level: level + 1)
                offset += root.count == 0 ? 0 : (width - 20) * Double(child.count) / Double(root.count)
            }
        }
        draw(root, x: 10, level: 0)
        let script = """
            function search() { var term = prompt('Search frames (substring)'); if (term === null) return;
              var n = 0; document.querySelectorAll('g.f').forEach(function (g) {
                var hit = term !== '' && g.querySelector('title').textContent.indexOf(term) >= 0;
                g.querySelector('rect').setAttribute('stroke', hit ? 'black' : 'none'); g.querySelector('rect').setAttribute('stroke-width', hit ? '2' : '0'); if (hit) n++; });
              document.getElementById('matched').textContent = term === '' ? '' : n + ' frame(s) match ' + term; }
            """
        return """
            <?xml version="1.0" standalone="no"?>
            <svg version="1.1" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" xmlns="http://www.w3.org/2000/svg">
            <style>text { font: 12px monospace; fill: #000; pointer-events: none } #search { cursor: pointer; fill: #06c }</style>
            <script type="text/ecmascript"><![CDATA[
            \(script)
            ]]></script>
            <rect width="100%" height="100%" fill="#fdfcf8"/>
            <text x="10" y="20" style="font-size:15px">\(escape(title)) (\(root.count) samples)</text>
            <text id="search" x="\(Int(width) - 70)" y="20" onclick="search()" style="pointer-events:all">Search</text>
            <text id="matched" x="10" y="38"></text>
            \(rects)</svg>

            """
    }

    /// A Chrome DevTools `.cpuprofile`: one node per distinct frame path, `samples` grouped by
    /// stack. A frame `function (file:line)` becomes `{functionName, url, lineNumber}` (zero-based
    /// line, the file under `directory` when it is relative); other frames have no url.
    static func cpuprofile(_ folded: String, directory: String? = nil, intervalMicroseconds: Int = 1000) -> MacroValue {
        let root = tree(folded, root: "(root)")
        var nodes: [MacroValue] = []
        var samples: [MacroValue] = []
        var nextID = 1
        func emit(_ node: Node) -> Int {
            let id = nextID
            nextID += 1
            let index = nodes.count
            nodes.append(.null)
            let frame = Frame(node.name, directory: directory)
            let own = node.count - node.order.reduce(0) { $0 + node.children[$1]!.count }
            for _ in 0..<max(0, own) { samples.append(.number(Double(id))) }
            let children = node.order.map { emit(node.children[$0]!) }
            nodes[index] = [
                "id": .number(Double(id)),
                "callFrame": [
                    "functionName": .string(frame.function), "scriptId": "0", "url": .string(frame.url),
                    "lineNumber": .number(Double(frame.line.map { $0 - 1 } ?? -1)), "columnNumber": -1,
                ],
                "hitCount": .number(Double(max(0, own))),
                "children": .array(children.map { .number(Double($0)) }),
            ]
            return id
        }
        _ = emit(root)
        return [
            "nodes": .array(nodes), "startTime": 0, "endTime": .number(Double(samples.count * intervalMicroseconds)),
            "samples": .array(samples), "timeDeltas": .array(Array(repeating: .number(Double(intervalMicroseconds)), count: samples.count)),
        ]
    }

    /// A folded frame's parts: `function (file:line)`, `function (line N)` or a bare name.
    struct Frame: Equatable {
        var function: String
        var url = ""
        var line: Int?

        init(_ label: String, directory: String?) {
            function = label
            guard let open = label.range(of: " (", options: .backwards), label.hasSuffix(")") else { return }
            let inside = label[open.upperBound..<label.index(before: label.endIndex)]
            function = String(label[..<open.lowerBound])
            if inside.hasPrefix("line ") {
                line = Int(inside.dropFirst(5))
                return
            }
            var file = inside
            if let colon = inside.lastIndex(of: ":"), let number = Int(inside[inside.index(after: colon)...]) {
                file = inside[..<colon]
                line = number
            }
            let relative = !file.hasPrefix("/") && !file.hasPrefix("<")
            url = relative && directory != nil ? "\(directory!)/\(file)" : String(file)
        }
    }
}
