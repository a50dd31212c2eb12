import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("Conversions between Swift and JavaScript")
struct ConversionTests {
    static let roundTrips: [MacroValue] = [
        .undefined, .null, true, false, 0, -1.5, 9_007_199_254_740_992, .number(.greatestFiniteMagnitude),
        "", "héllo wörld 🎉", "nul\u{0}inside", "line\nbreak",
        [1, "two", .null, [3, [4]]], [:],
        ["b": 1, "a": ["nested": [true, false]], "list": [1, 2]],
        .date(Date(timeIntervalSince1970: 1_700_000_000.123)),
    ]

    @Test(arguments: roundTrips)
    func swiftToJavaScriptAndBack(_ value: MacroValue) throws {
        let (engine, _, _) = try makeEngine()
        try engine.setValue(value, forKey: "v")
        #expect(try engine.value(forKey: "v") == value)
        // And JS sees the right kind of thing.
        let kind = try engine.evaluate("v === undefined ? 'u' : v === null ? 'n' : Array.isArray(v) ? 'a' : v instanceof Date ? 'd' : typeof v")
        let expected: MacroValue =
            switch value {
            case .undefined: "u"
            case .null: "n"
            case .array: "a"
            case .date: "d"
            case .bool: "boolean"
            case .number: "number"
            case .string: "string"
            default: "object"
            }
        #expect(kind == expected)
    }

    @Test func subscriptsReadAndWriteGlobals() throws {
        let (engine, _, _) = try makeEngine()
        engine["level"] = 3
        #expect(engine["level"] == 3)
        #expect(try engine.evaluate("level * 2") == 6)
        #expect(engine["missing"] == .undefined)
    }

    @Test func javascriptValuesToSwift() throws {
        let (engine, _, _) = try makeEngine()
        #expect(try engine.evaluate("[1, 'a', null, undefined, true]") == [1, "a", .null, .undefined, true])
        #expect(try engine.evaluate("({z: 1, a: {b: [2]}})") == ["z": 1, "a": ["b": [2]]])
        #expect(try engine.evaluate("new Date(86400000)") == .date(Date(timeIntervalSince1970: 86400)))
        #expect(try engine.evaluate("-0") == .number(-0.0))
        #expect(try engine.evaluate("NaN").doubleValue?.isNaN == true)
        #expect(try engine.evaluate("1/0") == .number(.infinity))
    }

    @Test func objectEqualityIgnoresOrder() {
        let a: MacroValue = ["x": 1, "y": [2]]
        let b: MacroValue = ["y": [2], "x": 1]
        #expect(a == b)
        #expect(a != ["x": 1])
        #expect(a != ["x": 1, "y": [3]])
        #expect(MacroValue.number(.nan) != .number(.nan))
    }

    @Test func objectKeyOrderIsKept() throws {
        let (engine, _, _) = try makeEngine()
        let value = try engine.evaluate("({zeta: 1, alpha: 2, mid: 3})")
        #expect(value.objectValue.map { Array($0.keys) } == ["zeta", "alpha", "mid"])
        #expect(value.jsonText() == #"{"zeta":1,"alpha":2,"mid":3}"#)
    }

    @Test func errorsConvert() throws {
        let (engine, _, _) = try makeEngine()
        let value = try engine.evaluate("new TypeError('bad thing')")
        guard case .error(let name, let message, _) = value else {
            Issue.record("expected an error value, got \(value)")
            return
        }
        #expect(name == "TypeError")
        #expect(message == "bad thing")
        try engine.setValue(.error(name: "RangeError", message: "out", stack: nil), forKey: "e")
        #expect(try engine.evaluate("(e instanceof RangeError) + ':' + e.message") == "true:out")
    }

    @Test func functionsAreCallableFromSwiftAndGoBack() throws {
        let (engine, _, _) = try makeEngine()
        let value = try engine.evaluate("(function add(a, b) { return a + b })")
        guard case .function(let add) = value else {
            Issue.record("expected a function, got \(value)")
            return
        }
        #expect(add.name == "add")
        #expect(try add.call(2, 3) == 5)
        try engine.setValue(.function(add), forKey: "plus")
        #expect(try engine.evaluate("plus(10, 20)") == 30)
    }

    @Test func loneSurrogatesDoNotCrash() throws {
        let (engine, _, _) = try makeEngine()
        #expect(try engine.evaluate("'a\\uD800b'") == "a\u{FFFD}b")
        #expect(try engine.evaluate("'\\uDFFF'") == "\u{FFFD}")
        #expect(try engine.evaluate("'\\uD83D\\uDE00'") == "😀")
    }

    @Test func unconvertibleValuesGiveClearErrors() throws {
        let (engine, _, _) = try makeEngine()
        let cyclic = try #require(throws: MacroError.self) { try engine.evaluate("var o = {a: {}}; o.a.back = o; o") }
        #expect(cyclic.code == .conversion)
        #expect(cyclic.message == "cannot convert a cyclic object: value.a.back refers back to one of its parents")

        let symbol = try #require(throws: MacroError.self) { try engine.evaluate("({s: Symbol('x')})") }
        #expect(symbol.message == "cannot convert a Symbol (at value.s) to a Swift value")

        let bigint = try #require(throws: MacroError.self) { try engine.evaluate("[10n]") }
        #expect(bigint.message == "cannot convert a bigint (at value[0]) to a Swift value")

        let deep = try #require(throws: MacroError.self) {
            try engine.evaluate("var d = []; var c = d; for (var i = 0; i < 300; i++) { var n = []; c.push(n); c = n } d")
        }
        #expect(deep.code == .conversion)
        #expect(deep.message.hasPrefix("cannot convert a value nested deeper than 256 levels"))

        let getter = try #require(throws: MacroError.self) { try engine.evaluate("({get x() { throw new Error('nope') }})") }
        #expect(getter.message == "reading value.x threw: Error: nope")
    }

    @Test func sharedButNotCyclicReferencesAreFine() throws {
        let (engine, _, _) = try makeEngine()
        #expect(try engine.evaluate("var s = [1]; ({a: s, b: s})") == ["a": [1], "b": [1]])
    }

    @Test func jsonTextFollowsJSONStringify() throws {
        let value: MacroValue = ["a": .undefined, "b": [.undefined, 1.5, .number(.nan)], "c": "q\"\n\u{1}"]
        #expect(value.jsonText() == #"{"b":[null,1.5,null],"c":"q\"\n\u0001"}"#)
        #expect(try MacroValue(jsonText: #"{"k": [1, true, null, "s"]}"#) == ["k": [1, true, .null, "s"]])
        #expect(throws: MacroError.self) { try MacroValue(jsonText: "{nope") }
        #expect(try MacroValue(jsonText: "-2") == -2)
    }
}
