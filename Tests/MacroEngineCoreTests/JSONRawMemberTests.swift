import MacroEngineCore
import Testing

/// `JSONParser.parse(_:keepingRawMember:)`: the member's text exactly as written.
@Suite("JSON raw members")
struct JSONRawMemberTests {
    @Test func theTopLevelObjectsMemberKeepsItsText() throws {
        let document = try JSONParser.parse(Array(#" {"a":1, "id" : 1152921504606846977 ,"params":{"id":2}} "#.utf8), keepingRawMember: "id")
        #expect(document.rawMembers == [0: "1152921504606846977"])
        #expect(document.value["params"]["id"] == 2)
        #expect(try JSONParser.parse(Array(#"{"id":"\u00e9\"x"}"#.utf8), keepingRawMember: "id").rawMembers == [0: #""\u00e9\"x""#])
        #expect(try JSONParser.parse(Array(#"{"id":-0.0e+1}"#.utf8), keepingRawMember: "id").rawMembers == [0: "-0.0e+1"])
        // A repeated key: the last one, as its value.
        #expect(try JSONParser.parse(Array(#"{"id":1,"id":2.50}"#.utf8), keepingRawMember: "id").rawMembers == [0: "2.50"])
        #expect(try JSONParser.parse(Array(#"{"x":1}"#.utf8), keepingRawMember: "id").rawMembers == [:])
    }

    @Test func eachObjectOfATopLevelArrayIsKeptByItsIndex() throws {
        let document = try JSONParser.parse(Array(#"[{"id":1e3}, 7, {"x":{"id":5}}, [{"id":6}], {"id":null}]"#.utf8), keepingRawMember: "id")
        #expect(document.rawMembers == [0: "1e3", 4: "null"])
        #expect(document.value[1] == 7)
    }

    @Test func errorsAreTheSameAsWithoutIt() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(#"{"id":1"#.utf8), keepingRawMember: "id") }
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(#"{"id":1e}"#.utf8), keepingRawMember: "id") }
    }

    /// A request's number past a double's range is valid JSON: it reads as ±Infinity, as
    /// `JSON.parse` reads it, and an id keeps its text (the plain parse still refuses it).
    @Test func aNumberPastADoublesRangeReadsAsInfinityAndKeepsItsText() throws {
        let document = try JSONParser.parse(Array(#"{"id":1e999,"params":[-2E+400]}"#.utf8), keepingRawMember: "id")
        #expect(document.rawMembers == [0: "1e999"])
        #expect(document.value["id"] == .number(.infinity))
        #expect(document.value["params"][0] == .number(-.infinity))
        #expect(throws: JSONParseError.self) { try JSONParser.parse("1e999") }
    }
}
