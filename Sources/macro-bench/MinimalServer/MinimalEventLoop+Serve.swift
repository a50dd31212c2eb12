/// The minimal server's work for one request line: scan it, call the macro, append the reply
/// to the connection's replies and, when the call changed the progress value, a line to the
/// tick's journal.
extension MinimalEventLoop {
    /// Serves one request line (without its newline): its reply line goes to `out`.
    func serve(_ line: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        switch MinimalCallScanner.scan(line) {
        case .failure(let id, let code, let message):
            MinimalReply.error(id: id.map { UnsafeBufferPointer(rebasing: line[$0]) }, code: code, message: message, to: &out)
        case .call(let request):
            let id = UnsafeBufferPointer(rebasing: line[request.id])
            guard line[request.name].elementsEqual(macro.name) else {
                MinimalReply.error(id: id, code: -32601, message: "no macro by that name", to: &out)
                return
            }
            let start = out.count
            MinimalReply.resultStart(id: id, to: &out)
            MinimalProgress.changed = false
            guard macro.call(line: line, arguments: request.arguments, to: &out) else {
                out.removeSubrange(start...)
                MinimalReply.error(id: id, code: -32000, message: "the macro threw", to: &out)
                return
            }
            MinimalReply.resultEnd(to: &out)
            if MinimalProgress.changed { MinimalReply.journalLine(inner: MinimalProgress.inner, to: &journalLines) }
        }
    }
}
