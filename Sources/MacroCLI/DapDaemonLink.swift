import Foundation
import MacroBase
import MacroRPC
import Synchronization

/// The adapter's connection to macrod: requests are sent from any thread, and one reader
/// thread hands each response to the callback waiting for it and each notification to
/// `onNotification`.
///
/// `@unchecked Sendable`: the RPCClient is used by two threads, but for disjoint things: the
/// reader thread alone reads (``RPCClient/readMessage()``, the only user of its buffer), and
/// writes (``RPCClient/send(raw:)``, a plain `send(2)` of a whole line) happen under `sending`.
final class DapDaemonLink: @unchecked Sendable {
    typealias Reply = @Sendable (Result<MacroValue, RPCError>) -> Void

    private let client: RPCClient
    private let sending = Mutex<Int>(0)
    private let pending = Mutex<[Int: Reply]>([:])
    private let onNotification: @Sendable (String, MacroValue) -> Void
    private let onClose: @Sendable () -> Void

    /// Connects to `path`; nothing is read until ``startReading()``.
    init(path: String, onNotification: @escaping @Sendable (String, MacroValue) -> Void, onClose: @escaping @Sendable () -> Void) throws {
        client = try RPCClient(path: path)
        self.onNotification = onNotification
        self.onClose = onClose
    }

    /// Starts the reader thread.
    func startReading() {
        let thread = Thread { [self] in
            while let message = try? client.readMessage() {
                switch RPCCodec.incoming(message) {
                case .notification(let note):
                    onNotification(note["method"].stringValue ?? "", note["params"])
                case .response(let id, let result):
                    guard let number = id.intValue, let reply = pending.withLock({ $0.removeValue(forKey: number) }) else { continue }
                    reply(result)
                }
            }
            let waiting = pending.withLock { pending in
                defer { pending.removeAll() }; return Array(pending.values)
            }
            waiting.forEach { $0(.failure(RPCError(code: RPCError.internalError, message: "macrod closed the connection"))) }
            onClose()
        }
        thread.name = "macro dap: macrod"
        thread.start()
    }

    /// Sends `method` with `params`; `reply` gets the result on the reader thread.
    func call(_ method: RPCMethod, _ params: MacroValue, reply: @escaping Reply) {
        let failed: RPCError? = sending.withLock { next in
            next += 1
            let number = next
            pending.withLock { $0[number] = reply }
            do {
                try client.send(raw: RPCCodec.request(id: RPCID(json: String(number)), method: method.rawValue, params: params).text)
                return nil
            } catch {
                pending.withLock { _ = $0.removeValue(forKey: number) }
                return error as? RPCError ?? RPCError(code: RPCError.internalError, message: "\(error)")
            }
        }
        if let failed { reply(.failure(failed)) }
    }

    /// Sends `method` with `params` and waits for the result (not on the reader thread: it
    /// delivers it). The connection's end answers every call, so this never waits forever.
    func callAndWait(_ method: RPCMethod, _ params: MacroValue) -> Result<MacroValue, RPCError> {
        let answered = DispatchSemaphore(value: 0)
        let result = Mutex<Result<MacroValue, RPCError>?>(nil)
        call(method, params) { value in
            result.withLock { $0 = value }
            answered.signal()
        }
        answered.wait()
        return result.withLock { $0 } ?? .failure(RPCError(code: RPCError.internalError, message: "no answer"))
    }

    /// Ends the connection: macrod sees it close (and ends its session), the reader thread ends.
    func close() { client.shutdownWrite() }
}
