import NIOCore

/// A profile of a macro: the folded stacks of its runs (see ``FoldedStacks``).
public struct MacroProfile: Sendable, Equatable {
    /// The macro.
    public var name: String
    /// How many times it ran.
    public var runs: Int
    /// The samples the folded stacks hold.
    public var samples: Int
    /// The samples left out because JavaScriptCore could not place them: a frame drawn above a
    /// caller that was not calling it (see ``FoldedStacks``).
    public var dropped: Int
    /// `root;caller;callee COUNT` lines; files named relative to ``directory``.
    public var folded: String
    /// The macros directory the frames' files are relative to.
    public var directory: String

    /// `macro.profile`'s answer: `{name, runs, samples, dropped, folded, macrosDir}`.
    public var json: MacroValue {
        [
            "name": .string(name), "runs": .number(Double(runs)), "samples": .number(Double(samples)), "dropped": .number(Double(dropped)),
            "folded": .string(folded), "macrosDir": .string(directory),
        ]
    }
}

extension MacroLibrary {
    /// The largest number of runs of one profile (``ProfileLimits/maximumRuns``).
    public static let maximumProfileRuns = ProfileLimits.maximumRuns

    /// Runs macro `name` `runs` times, one after the other (each awaited), under JavaScriptCore's
    /// sampling profiler, and folds the samples. A run that fails fails the profile with its
    /// error (the profiler is stopped either way). The daemon's `macro.profile` and `macro
    /// profile --local` both profile through here.
    ///
    /// The profiler samples the engine's whole VM: what else runs meanwhile (another call, while
    /// an async run awaits) is sampled too.
    public func profile(_ name: String, arguments: [MacroValue] = [], runs: Int, deadline: Duration? = nil) -> EventLoopFuture<MacroProfile> {
        let engine = engine, loop = engine.eventLoop
        guard entry(named: name)?.version ?? 0 > 0 else {
            // Not live: it fails as a call of it does (naming the macros there are), and nothing runs.
            return callFuture(name).flatMapThrowing { _ in throw MacroError(code: .noSuchMacro, message: "macro '\(name)' is not loaded", macro: name) }
        }
        return engine.startSampling().flatMap { started -> EventLoopFuture<Void> in
            guard started else {
                return loop.makeFailedFuture(MacroError(code: .io, message: "this JavaScriptCore has no sampling profiler", macro: name))
            }
            var chain = loop.makeSucceededVoidFuture()
            for _ in 0..<runs {
                chain = chain.flatMap { self.callFuture(name, arguments: arguments, deadline: deadline).map { _ in } }
            }
            return chain
        }.flatMapError { error in
            engine.stopSampling().flatMapThrowing { _ in throw error }
        }.flatMap {
            engine.stopSampling()
        }.flatMapThrowing { json in
            let folded = FoldedStacks.fold(try MacroValue(jsonText: json), sources: self.profiledSources)
            return MacroProfile(name: name, runs: runs, samples: folded.samples, dropped: folded.dropped, folded: folded.text, directory: self.directory)
        }
    }

    /// The live macro and lib files as the profiler names them: relative to the directory.
    var profiledSources: [FoldedStacks.Source] {
        liveSources.map { file, source, macro in
            let name = file.hasPrefix(directory + "/") ? String(file.dropFirst(directory.count + 1)) : file
            return FoldedStacks.Source(url: file, name: name, source: source, topLevelName: macro)
        }
    }
}
