/// The import graph of the module files as they are on disk: a load order (each module after
/// what it imports) and the cycles, which are errors. A value; no JavaScript.
struct ModuleGraph: Equatable {
    /// What each module imports (paths of other modules; imports of paths that are not nodes
    /// are left for the link step to report).
    let edges: [String: [String]]
    /// The modules, each after the modules it imports, in name order where free.
    private(set) var order: [String] = []
    /// Each module on a cycle, with the cycle from it back to it (`[a, b, a]`).
    private(set) var cycles: [String: [String]] = [:]

    init(edges: [String: [String]]) {
        self.edges = edges
        var state: [String: Bool] = [:]  // false: on the stack; true: done
        var stack: [String] = []
        func visit(_ node: String) {
            if let done = state[node] {
                if !done, let start = stack.firstIndex(of: node) {
                    let cycle = Array(stack[start...]) + [node]
                    for member in stack[start...] where cycles[member] == nil {
                        let index = cycle.firstIndex(of: member)!
                        cycles[member] = Array(cycle[index..<(cycle.count - 1)]) + Array(cycle[..<index]) + [member]
                    }
                }
                return
            }
            state[node] = false
            stack.append(node)
            for next in (edges[node] ?? []).sorted() where edges[next] != nil { visit(next) }
            stack.removeLast()
            state[node] = true
            order.append(node)
        }
        for node in edges.keys.sorted() { visit(node) }
    }

    /// True when `from` imports `to`, directly or through other modules.
    func reaches(_ from: String, _ to: String) -> Bool {
        var seen: Set<String> = [from]
        var queue = [from]
        while let next = queue.popLast() {
            for target in edges[next] ?? [] {
                if target == to { return true }
                if seen.insert(target).inserted { queue.append(target) }
            }
        }
        return false
    }
}
