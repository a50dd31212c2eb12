import MacroBase
import MacroRPC
import Testing

/// The single request's fast path (``JSONParser/parseTopObject(_:maximumDepth:member:)``, the
/// ladder) reads every line exactly as the general path does: the whole document parsed, then
/// ``RPCCodec/request(from:rawID:)``.
@Suite("Parse: the single request's fast path")
struct ParseFastPathTests {
    /// The general path: the document, then the request made of its object.
    static func general(_ line: String) -> Result<RPCRequest, RPCFailure>? {
        guard let document = try? JSONParser.parse(Array(line.utf8), maximumDepth: RPCCodec.maximumDepth, keepingRawMember: "id") else { return nil }
        return RPCCodec.request(from: document.value, rawID: document.rawMember(at: 0))
    }

    static let lines = [
        #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"add","args":[0.5]}}"#,
        #"{"jsonrpc":"2.0","id":1,"id":"x","method":"a","method":"b","params":[1]}"#,
        #"{"jsonrpc":"2.0","i\u0064":1e3,"method":"m"}"#,
        #"  { "id" : -0 , "jsonrpc" : "2.0" , "method" : "m" , "extra" : {"a":[1,2,{"b":null}]} }  "#,
        #"{"jsonrpc":"2.0","id":{"a":1},"method":"m"}"#,
        #"{"jsonrpc":"2.1","id":2,"method":"m"}"#,
        #"{"jsonrpc":"2.0","id":2,"method":3}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"m","params":"p"}"#,
        #"{"jsonrpc":"2.0","method":"m","params":{}}"#,
        #"{}"#,
        #"{"id":"\u00e9","jsonrpc":"2.0","method":"m","params":{"x":1.50,"y":-12.25,"z":0.1}}"#,
    ]

    @Test(arguments: lines) func aLineReadsAsTheGeneralPathReadsIt(_ line: String) throws {
        guard case .single(let fast) = RPCCodec.parse(Array(line.utf8)) else {
            Issue.record("not a single request: \(line)")
            return
        }
        let general = try #require(Self.general(line))
        switch (fast, general) {
        case (.success(let a), .success(let b)):
            #expect(a.id == b.id && a.method == b.method && a.params == b.params)
            #expect(Array(a.params.objectValue?.keys ?? []) == Array(b.params.objectValue?.keys ?? []))
        case (.failure(let a), .failure(let b)):
            #expect(a.id == b.id && a.error.code == b.error.code && a.error.message == b.error.message)
        default:
            Issue.record("the paths disagree on \(line): \(fast) vs \(general)")
        }
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"m""#, #"{"jsonrpc":"2.0",}"#, #"{"a":1} x"#, #"{"a":01}"#, #"{"a":1.}"#,
    ]) func aBrokenObjectFailsWithTheGeneralParsersError(_ line: String) {
        var generalError: JSONParseError?
        do { _ = try JSONParser.parse(Array(line.utf8)) } catch { generalError = error }
        var fastError: JSONParseError?
        do {
            _ = try Array(line.utf8).withUnsafeBytes { bytes in
                try JSONParser.parseTopObject(bytes) { _, _, _ in }
            }
        } catch {
            fastError = error as? JSONParseError
        }
        #expect(generalError != nil && fastError == generalError)
    }

    @Test func shortDecimalsAreTheDoublesStrtodGives() throws {
        var generator = SystemRandomNumberGenerator()
        var texts = ["0.5", "-0.0", "0.1", "1.50", "-12.25", "0.000000000000001", "999999999999.999", "123456789012345.0", "0.30000000000000004"]
        for _ in 0..<20_000 {
            let digits = Int.random(in: 2...15, using: &generator)
            let point = Int.random(in: 1..<digits, using: &generator)
            var text = (0..<digits).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
            text.insert(".", at: text.index(text.startIndex, offsetBy: point))
            if text.hasPrefix(".") { text = "0" + text }
            while text.count > 2, text.hasPrefix("0"), !text.hasPrefix("0.") { text.removeFirst() }
            texts.append(Bool.random(using: &generator) ? "-" + text : text)
        }
        for text in texts {
            let parsed = try JSONParser.parse(Array(text.utf8))
            let expected = try #require(Double(text))
            #expect(parsed.doubleValue?.bitPattern == expected.bitPattern, "\(text)")
        }
    }
}
