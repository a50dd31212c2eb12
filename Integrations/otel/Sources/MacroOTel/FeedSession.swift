import Logging
import MacroBase
import MacroRPC

/// The feed's work on its thread, over one connection (see ``RunFeed``).
struct FeedSession {
    let client: RPCClient
    let settings: RunFeed.Settings
    /// The last run handed over (or skipped).
    var mark: ExportMark
    /// Skip the runs kept now (`--skip-existing`) at the first catch-up.
    var skipExisting: Bool
    let control: FeedControl
    let logger: Logger

    /// Opens the connection.
    static func connect(to socket: String) throws(ExportError) -> RPCClient {
        do {
            return try RPCClient(path: socket)
        } catch {
            throw ExportError(error.exitCode == Int32(RPCClient.ConnectError.refused) ? .refused : .unreachable, error.description)
        }
    }

    /// Subscribes, catches up, then follows the notifications until the connection ends (an
    /// error) or the feed is stopped (returns).
    mutating func run() throws(ExportError) {
        let subscribed = try call(.subscribe, ["events": ["runs"]])
        guard subscribed["events"].arrayValue?.contains(.string("runs")) == true else {
            throw ExportError(.malformedReply, "macrod at \(client.path) did not subscribe this connection to runs: subscribe answered \(subscribed.jsonText().prefix(200))")
        }
        guard control.emit(.connected) else { return }
        guard try catchUp() else { return }
        while !control.isStopping {
            client.setReceiveTimeout(seconds: settings.pollSeconds)
            let note: MacroValue?
            do {
                note = try client.nextNotification()
            } catch {
                if control.isStopping { return }
                // A quiet connection (the poll's time ran out) or a broken one: the catch-up tells
                // which, and finds a run recorded without a notification.
                guard try catchUp() else { return }
                continue
            }
            guard let note else {
                if control.isStopping { return }
                throw ExportError(.connectionLost, "macrod at \(client.path) closed the connection")
            }
            guard note["method"].stringValue == RPCNotification.runRecorded.rawValue else { continue }
            guard let summary = RunSummary(json: note["params"]) else {
                throw ExportError(.malformedReply, "run.recorded without a run id: \(note.jsonText().prefix(200))")
            }
            if summary.id <= mark.id { continue }
            if summary.id == mark.id + 1 {
                guard try hand(summary) else { return }
            } else {
                // A gap: runs recorded without a notification (an engine restart's) or while this
                // connection fell behind. The catch-up hands them over in order, this one too.
                guard try catchUp() else { return }
            }
        }
    }

    /// Hands over every kept run after the mark, oldest first. False when stopping.
    mutating func catchUp() throws(ExportError) -> Bool {
        let kept = try keptRuns()
        let newest = kept.last?.id ?? 0
        var selected = kept.filter { $0.id > mark.id }
        // The kept run with the mark's id ended at another time: its id was given again.
        let reused = mark.ended.nanosecondsSinceEpoch != 0 && (kept.first { $0.id == mark.id }.map { $0.ended != mark.ended } ?? false)
        if mark.id > 0, newest < mark.id || reused {
            // Ids start again past the records macrod loaded: those since its last stop were lost
            // (kill -9). The runs that ended after the last one exported are the new ones.
            logger.warning(
                "macrod's run ids went back (its newest is \(newest), the last exported \(mark.id)): its records since its last stop were lost (kill -9?); exporting the kept runs that ended after \(Timestamp.format(mark.ended))"
            )
            selected = kept.filter { $0.ended > mark.ended }
            mark = ExportMark(id: 0, ended: mark.ended)
            guard control.emit(.reset(mark)) else { return false }
        }
        if skipExisting {
            skipExisting = false
            if let last = kept.last {
                mark = last.mark
                logger.info("skipping the \(kept.count) runs macrod keeps (--skip-existing): exporting from run \(last.id + 1) on")
                return control.emit(.skip(mark))
            }
            return true
        }
        if !selected.isEmpty {
            logger.info("catching up: \(selected.count) run(s) after run \(mark.id) (\(selected.first!.id)...\(selected.last!.id))")
        }
        for summary in selected {
            guard try hand(summary) else { return false }
        }
        if mark.id < newest {
            // Kept runs that ended before the last one exported (after ids went back): not new.
            mark = ExportMark(id: newest, ended: mark.ended)
            guard control.emit(.skip(mark)) else { return false }
        }
        return control.emit(.caughtUp(count: selected.count))
    }

    /// Fetches run `summary.id` whole and hands it over; a run that rolled off or cannot be read
    /// is skipped (logged). False when stopping.
    mutating func hand(_ summary: RunSummary) throws(ExportError) -> Bool {
        let json: MacroValue
        do {
            json = try call(.runGet, ["id": .number(Double(summary.id))])
        } catch let error where error.rpcCode == RPCError.invalidParams {
            logger.warning("run \(summary.id) rolled off before it was read (runs_kept, failed_runs_kept, runs_bytes): not exported")
            mark = summary.mark
            return control.emit(.skip(mark))
        }
        do {
            let run = try MacroRun(json: json)
            mark = ExportMark(after: run)
            return control.emit(.run(run))
        } catch {
            logger.error("run \(summary.id) not exported: \(error.message)")
            mark = summary.mark
            return control.emit(.skip(mark))
        }
    }

    /// `run.list`'s summaries of every kept run after the mark (asking for more until the list
    /// reaches past the mark), oldest first.
    func keptRuns() throws(ExportError) -> [RunSummary] {
        var limit = 100
        while true {
            let reply = try call(.runList, ["limit": .number(Double(limit))])
            guard let items = reply.arrayValue else {
                throw ExportError(.malformedReply, "run.list did not answer an array: \(reply.jsonText().prefix(200))")
            }
            var runs: [RunSummary] = []
            runs.reserveCapacity(items.count)
            for item in items {
                guard let summary = RunSummary(json: item) else {
                    throw ExportError(.malformedReply, "run.list answered a run without an id: \(item.jsonText().prefix(200))")
                }
                runs.append(summary)
            }
            if runs.count == limit, limit < 1_000_000, let first = runs.first, first.id > mark.id + 1 {
                limit = min(limit * 10, 1_000_000)
                continue
            }
            return runs
        }
    }

    /// Calls `method`, giving macrod ``RunFeed/Settings/replySeconds`` to answer.
    func call(_ method: RPCMethod, _ params: MacroValue) throws(ExportError) -> MacroValue {
        client.setReceiveTimeout(seconds: settings.replySeconds)
        do {
            return try client.call(method, params)
        } catch let error as RPCError {
            // RPCClient reports a broken or silent connection as an internal error without data.
            if error.code == RPCError.internalError, error.data == nil {
                throw ExportError(.connectionLost, "\(method.rawValue) to macrod at \(client.path): \(error.message)")
            }
            throw ExportError(.rpcError, "macrod answered \(method.rawValue) with \(error.code): \(error.message)", rpcCode: error.code)
        } catch {
            throw ExportError(.malformedReply, "macrod at \(client.path) answered \(method.rawValue) with a line that is not JSON-RPC: \(error)")
        }
    }
}
