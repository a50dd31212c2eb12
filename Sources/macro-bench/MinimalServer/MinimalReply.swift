import Foundation

/// The minimal server's output bytes, written straight into a connection's reply buffer (or
/// the tick's journal buffer): the JSON-RPC reply lines in macrod's shape
/// (`{"jsonrpc":"2.0","id":N,"result":V}` and `{"jsonrpc":"2.0","id":N,"error":{...}}`) and the
/// journal line, with numbers spelt as macrod spells them.
enum MinimalReply {
    /// Appends a reply's start, up to and including `"result":`; the id is copied verbatim.
    static func resultStart(id: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        append("{\"jsonrpc\":\"2.0\",\"id\":", to: &out)
        out.append(contentsOf: id)
        append(",\"result\":", to: &out)
    }

    /// Appends the end of a reply begun with ``resultStart(id:to:)``, and the newline.
    static func resultEnd(to out: inout [UInt8]) {
        append("}\n", to: &out)
    }

    /// Appends a whole error reply line (the id verbatim, or `null` when there was none).
    static func error(id: UnsafeBufferPointer<UInt8>?, code: Int, message: StaticString, to out: inout [UInt8]) {
        append("{\"jsonrpc\":\"2.0\",\"id\":", to: &out)
        if let id { out.append(contentsOf: id) } else { append("null", to: &out) }
        append(",\"error\":{\"code\":", to: &out)
        out.append(contentsOf: String(code).utf8)
        append(",\"message\":\"", to: &out)
        append(message, to: &out)
        append("\"}}\n", to: &out)
    }

    /// Appends the journal line of the progress value after a changing call: `{"inner":V}`.
    static func journalLine(inner: Double, to out: inout [UInt8]) {
        append("{\"inner\":", to: &out)
        number(inner, to: &out)
        append("}\n", to: &out)
    }

    /// Appends `n` as macrod writes a number: whole numbers as integers, fractions as Swift's
    /// shortest spelling, non-finite as `null`.
    static func number(_ n: Double, to out: inout [UInt8]) {
        if !n.isFinite {
            append("null", to: &out)
        } else if n == n.rounded(), abs(n) < 9.2e18 {
            // Int64(-0.0) is 0, as JSON.stringify writes it.
            out.append(contentsOf: String(Int64(n)).utf8)
        } else if n == n.rounded(), abs(n) < 1e21 {
            out.append(contentsOf: String(format: "%.0f", n).utf8)
        } else {
            out.append(contentsOf: n.description.utf8)
        }
    }

    /// Appends a literal's bytes.
    static func append(_ literal: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}
