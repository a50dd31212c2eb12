import MacroEngineCore
import Testing

@Suite("JSON parser")
struct JSONParserTests {
    @Test func parsesEveryKindOfValueAndKeepsKeyOrder() throws {
        let value = try JSONParser.parse(#" {"z": 1, "a": [true, false, null, -0.5, 1e3, "x\ty"], "m": {}} "#)
        guard case .object(let fields) = value else { Issue.record("not an object: \(value)"); return }
        #expect(Array(fields.keys) == ["z", "a", "m"])
        #expect(fields["a"] == [true, false, .null, -0.5, 1000, "x\ty"])
        #expect(fields["m"] == .object([:]))
        #expect(value.jsonText() == #"{"z":1,"a":[true,false,null,-0.5,1000,"x\ty"],"m":{}}"#)
    }

    @Test func escapesAndSurrogatePairsDecode() throws {
        #expect(try JSONParser.parse(#""\u00e9\ud83d\ude00\"\\\/\b\f\n\r""#) == .string("é😀\"\\/\u{08}\u{0C}\n\r"))
        // A lone surrogate cannot be UTF-8: it becomes U+FFFD (JSON.parse keeps it in UTF-16).
        #expect(try JSONParser.parse(#""\ud800x""#) == .string("\u{FFFD}x"))
    }

    @Test func aRepeatedKeyKeepsItsFirstPlaceAndLastValue() throws {
        #expect(try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#).jsonText() == #"{"a":3,"b":2}"#)
    }

    @Test func numbersAreExactOrRefused() throws {
        #expect(try JSONParser.parse("9007199254740991") == .number(9_007_199_254_740_991))
        #expect(try JSONParser.parse("12345678901234567890") == .number(1.2345678901234567e19))
        #expect(try JSONParser.parse("-0") == .number(-0.0))
        #expect(try JSONParser.parse("0.1") == .number(0.1))
        let huge = try #require(throws: JSONParseError.self) { try JSONParser.parse("1e400") }
        #expect(huge == JSONParseError(kind: .numberOutOfRange, message: "the number is too large for a double", offset: 0))
    }

    @Test(arguments: [
        ("", "unexpected end of the text at byte 0"),
        ("{", "expected a string key in an object at byte 1"),
        (#"{"a" 1}"#, "expected ':' after an object key at byte 5"),
        ("[1 2]", "expected ',' or ']' in an array at byte 3"),
        ("[1,]", "unexpected character ']' at byte 3"),
        ("01", "a number cannot start with 0 at byte 1"),
        ("1.", "expected a digit after '.' at byte 2"),
        ("tru", "unexpected end of the text at byte 0"),
        (#""abc"#, "unterminated string at byte 4"),
        (#""a\qb""#, "unknown escape '\\q' in a string at byte 2"),
        ("\"a\u{1}\"", "a control character in a string must be escaped at byte 2"),
        ("{} {}", "unexpected text after the JSON value at byte 3"),
        ("NaN", "unexpected character 'N' at byte 0"),
    ])
    func badTextNamesTheProblemAndTheByte(_ text: String, _ expected: String) throws {
        let error = try #require(throws: JSONParseError.self) { try JSONParser.parse(text) }
        #expect(error.description == expected)
    }

    @Test func invalidUTF8AndDeepNestingAreTheirOwnKinds() throws {
        let utf8 = try #require(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        #expect(utf8.kind == .invalidUTF8)
        let deep = try #require(throws: JSONParseError.self) {
            try JSONParser.parse(String(repeating: "[", count: 100_000), maximumDepth: 128)
        }
        #expect(deep == JSONParseError(kind: .tooDeep, message: "JSON nested deeper than 128 levels", offset: 128))
        #expect(throws: Never.self) { try JSONParser.parse(String(repeating: "[", count: 128) + String(repeating: "]", count: 128)) }
    }
}
