import CJavaScriptCore
import NIOCore

extension MacroEngine {
    /// Starts JavaScriptCore's sampling profiler for the engine's VM (a sample about once a
    /// millisecond while JavaScript runs) and returns once it samples. False when this
    /// JavaScriptCore has none.
    public func startSampling() -> EventLoopFuture<Bool> {
        let runtime = runtime
        return eventLoop.submit {
            let runtime = runtime.value
            guard JSContextGroupEnableSamplingProfiler(runtime.group) else { return false }
            Self.awaitFirstSample(runtime)
            return true
        }
    }

    /// Stops the sampling profiler and returns the samples taken since it started, as
    /// JavaScriptCore's JSON (`{"traces": [{"frames": [...]}], "sources": [...]}`, the top of
    /// each stack first).
    public func stopSampling() -> EventLoopFuture<String> {
        let runtime = runtime
        return eventLoop.submit {
            let group = runtime.value.group
            let text = Self.takeSamples(group)
            JSContextGroupDisableSamplingProfiler(group)
            return text
        }
    }

    /// JavaScriptCore's sampler thread does not always sample from the moment it is enabled: on
    /// a loaded machine (five profiles at once on two busy cores) about one profile of 100 ms of
    /// JavaScript in 75 had no sample at all (2.50.6). So the engine runs a little JavaScript of
    /// its own, 2 ms at a time, until the sampler has taken a sample (at most `budget`), and
    /// drops what it took: the runs are sampled from their start. Measured the same way: 150
    /// profiles, none empty; the wait is 2-6 ms as a rule, 285 ms the longest seen.
    static func awaitFirstSample(_ runtime: JSRuntime, budget: TimeAmount = .seconds(2)) {
        let deadline = NIODeadline.now() + budget
        repeat {
            // Under the watchdog like any JavaScript; a file without a URL, so never a frame.
            _ = try? runtime.engine?.enter(runtime, .housekeeping(macro: nil, timeLimit: .milliseconds(50))) {
                try runtime.evaluateRaw("(function () { var end = Date.now() + 2; while (Date.now() < end) {} })()", file: nil)
            }
            let taken = (try? MacroValue(jsonText: takeSamples(runtime.group)))?["traces"].arrayValue ?? []
            if !taken.isEmpty { return }
        } while NIODeadline.now() < deadline
    }

    /// The samples taken so far as JSON (and forgets them).
    static func takeSamples(_ group: JSContextGroupRef) -> String {
        JSContextGroupTakeSamplesFromSamplingProfiler(group).map { ref in
            defer { JSStringRelease(ref) }
            return String(jsString: ref)
        } ?? "{}"
    }
}
