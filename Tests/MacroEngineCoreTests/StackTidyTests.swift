import MacroTestSupport
import Testing

@testable import MacroEngineCore

/// Stacks read as a user expects: a caller's frame at the start of its call, not at its `(`;
/// an async function's resume frame left out; anonymous and native frames named.
@Suite("Stack frames")
struct StackTidyTests {
    @Test(arguments: [
        ("    return helper(x);", 18, 12),
        ("  return obj.method(1);", 20, 10),
        ("  a?.b.c (1)", 10, 3),
        ("  return [1, 2].map(function (x) {", 20, 10),
        ("  list[0](1)", 10, 3),
        ("  make()(2)", 9, 3),
        ("  var e = new Foo.Bar(1)", 22, 11),
        ("  await sleep(5)", 14, 9),
        ("  if (x) go(1)", 12, 10),
        ("  typeof (f)(1)", 13, 10),
        ("  x = 1 + y", 9, 9),
    ])
    func aCallStartsWhereItsExpressionStarts(line: String, column: Int, start: Int) {
        #expect(StackTidy.callStart(in: Substring(line), column: column) == start, "\(line)")
    }

    @Test func callersMoveTheInnermostFrameStaysAndUnknownFilesAreLeftAlone() {
        let source = "function f() {\n  throw new Error('x');\n}\nfunction g() {\n  return f();\n}\n"
        let stack = "f@/m/a.js:2:18\ng@/m/a.js:5:11\nh@/m/other.js:3:9\nmap@[native code]\n/m/a.js:5:11"
        let tidy = StackTidy.tidy(stack) { $0 == "/m/a.js" ? source : nil }
        #expect(tidy == "f@/m/a.js:2:18\ng@/m/a.js:5:10\nh@/m/other.js:3:9\nmap@[native code]\n/m/a.js:5:10")
    }

    @Test func anAsyncFunctionsResumeFrameIsLeftOut() {
        let source = "async function countdown(n) {\n  if (n === 0) throw new Error('liftoff');\n  await null;\n  return countdown(n - 1);\n}\n"
        let stack = "countdown@/m/c.js:2:33\ncountdown@/m/c.js:1:26\ncountdown@/m/c.js:4:19"
        #expect(StackTidy.tidy(stack) { _ in source } == "countdown@/m/c.js:2:33\ncountdown@/m/c.js:4:10")
        // A recursive call on the header's own line, past its `{`, is a real frame.
        let oneLine = "async function f(n) { if (!n) throw new Error('x'); return await f(n - 1); }\n"
        #expect(StackTidy.tidy("f@/m/o.js:1:37\nf@/m/o.js:1:67") { _ in oneLine } == "f@/m/o.js:1:37\nf@/m/o.js:1:66")
    }
}
