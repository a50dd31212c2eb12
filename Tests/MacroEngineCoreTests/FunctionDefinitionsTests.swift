import Testing

@testable import MacroEngineCore

/// The profiler's map of where each function of a file is defined (frames are named
/// `function (file:line)` with that line).
@Suite("Function definitions")
struct FunctionDefinitionsTests {
    typealias Definition = FunctionDefinitions.Definition

    @Test func declarationsExpressionsAndArrowsAreNamedAsJavaScriptNamesThem() {
        let source = """
            // lib/work.js
            function hot(n) {
                var s = 0;
                for (var i = 0; i < n; i++) s += Math.sqrt(i);
                return s;
            }
            var cold = function (n) { return n; };
            const twice = (x) =>
                x * 2;
            let one = x => { return x; }, two = async () => 2;
            async function* stream() {}
            [1, 2].map(function (x) { return x; });
            """
        #expect(
            FunctionDefinitions(source: source).all == [
                Definition(name: "hot", line: 2, endLine: 6),
                Definition(name: "cold", line: 7, endLine: 7),
                Definition(name: "twice", line: 8, endLine: 9),
                Definition(name: "one", line: 10, endLine: 10),
                Definition(name: "two", line: 10, endLine: 10),
                Definition(name: "stream", line: 11, endLine: 11),
                Definition(name: "", line: 12, endLine: 12),
            ])
    }

    @Test func methodsAccessorsAndConstructors() {
        let source = """
            var shapes = {
                area: function (r) { return r * r; },
                perimeter(r) {
                    return 4 * r;
                },
                get size() { return 1; },
                "quoted": () => 0,
            };
            class Ring extends Base {
                constructor(v) { super(v); }
                static make() { return new Ring(1); }
                async *values() {}
            }
            """
        #expect(
            FunctionDefinitions(source: source).all == [
                Definition(name: "area", line: 2, endLine: 2),
                Definition(name: "perimeter", line: 3, endLine: 5),
                Definition(name: "get size", line: 6, endLine: 6),
                Definition(name: "quoted", line: 7, endLine: 7),
                Definition(name: "Ring", line: 10, endLine: 10),
                Definition(name: "make", line: 11, endLine: 11),
                Definition(name: "values", line: 12, endLine: 12),
            ])
    }

    /// Braces, parentheses and the word `function` inside strings, comments, templates and
    /// regular expressions are not code; a template's `${...}` is.
    @Test func literalsAndCommentsAreNotCode() {
        let source = """
            function outer() {
                var a = "function fake() { {";
                var b = '}) => {';
                // function commented() {}
                /* function block() { */
                var c = `text ${ (function inTemplate() { return "}"; })() } } {`;
                var d = /function re() \\{ [}] \\//g.test(a) ? 1 / 2 : 3;
                return a + b + c + d;
            }
            function after() {}
            """
        #expect(
            FunctionDefinitions(source: source).all == [
                Definition(name: "outer", line: 1, endLine: 9),
                Definition(name: "inTemplate", line: 6, endLine: 6),
                Definition(name: "after", line: 10, endLine: 10),
            ])
    }

    /// A macro file's one function is registered under the macro's name, whatever its own.
    @Test func aMacroFilesFunctionTakesTheMacrosName() {
        let source = """
            // bump(channel): one up
            function (channel) {
                function inner() { return 1; }
                return inner();
            }
            """
        #expect(
            FunctionDefinitions(source: source, topLevelName: "bump").all == [
                Definition(name: "bump", line: 2, endLine: 5),
                Definition(name: "inner", line: 3, endLine: 3),
            ])
    }

    @Test func theDefinitionOfAnExecutedLine() {
        let source = """
            function hot(n) {
                function hot(m) {
                    return m;
                }
                return hot(n)
                    + 1;
            }
            function cold() {
                return 0;
            }
            """
        let definitions = FunctionDefinitions(source: source)
        // The innermost function of that name holding the line.
        #expect(definitions.definitionLine(of: "hot", executing: 3) == 2)
        #expect(definitions.definitionLine(of: "hot", executing: 6) == 1)
        #expect(definitions.definitionLine(of: "cold", executing: 9) == 8)
        // No line (optimized code): the only function of that name, else unknown.
        #expect(definitions.definitionLine(of: "cold", executing: nil) == 8)
        #expect(definitions.definitionLine(of: "hot", executing: nil) == nil)
        // A line outside any function of that name, a name the file does not define.
        #expect(definitions.definitionLine(of: "cold", executing: 3) == nil)
        #expect(definitions.definitionLine(of: "warm", executing: 3) == nil)
    }
}
