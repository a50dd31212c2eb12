import Testing
@testable import MacroEngineCore
import Foundation

@Test func probe() throws {
    let engine = MacroEngine()
    engine.exceptionHandler = { print("HANDLER", $0, $0.stack ?? "-") }
    try engine.register("twice") { (x: Double) -> Double in x * 2 }
    print("typeof", try engine.evaluate("typeof twice"))
    print("call", try engine.evaluate("twice.call(null, 4) + twice.apply(null,[5]) + twice.bind(null, 6)()"))
    print("bad", (try? engine.evaluate("try { twice('x') } catch(e) { e.name + ':' + e.message }")) as Any)
    _ = try? engine.evaluate("var a = 1;\n  throw new Error('boom')", file: "/tmp/x.js")
    _ = try? engine.evaluate("var a = 1;\n  a..b", file: "/tmp/y.js")
    _ = try? engine.setMethod(javascript: "function() {\n  var x = 1;\n  null.foo();\n}", key: "m1", file: "/tmp/m1.js")
    _ = try? engine.call("m1")
    _ = try? engine.setMethod(javascript: "function() {\n  var x = ;\n}", key: "m2", file: "/tmp/m2.js")
    _ = try? engine.setMethod(javascript: "function() { var x = ; }", key: "m3", file: "/tmp/m3.js")
    _ = try? engine.setMethod(javascript: "function() {\n  var x = 1;\n", key: "m4", file: "/tmp/m4.js")
    let t0 = Date()
    _ = try? engine.evaluate("while(true){}", timeLimit: .milliseconds(300))
    print("elapsed", Date().timeIntervalSince(t0))
    print("after", try engine.evaluate("1+1"))
    print("cyc", (try? engine.evaluate("var o = {}; o.self = o; o")) as Any)
    print("surrogate", try engine.evaluate("'a\\uD800b'"))
    print("eval", (try? engine.evaluate("eval('1')")) as Any)
}
@Test func probe2() throws {
    let engine = MacroEngine()
    engine.exceptionHandler = { print("HANDLER", $0, $0.stack ?? "-") }
    for src in ["function() {\n  var x = ;\n}", "function() { var x = ; }", "function() {\n  var x = 1;\n", "function() {\n  foo bar\n}", "function() { throw new Error('one') }", "// c\n 42", "function() {\n  var s = 'abc\n}"] {
        _ = try? engine.setMethod(javascript: src, key: "m", file: "/tmp/m.js")
    }
    _ = try? engine.call("m")
}
