import CJavaScriptCore
import NIOCore

extension MacroEngine {
    /// Starts JavaScriptCore's sampling profiler for the engine's VM (a sample about once a
    /// millisecond while JavaScript runs). False when this JavaScriptCore has none.
    public func startSampling() -> EventLoopFuture<Bool> {
        let runtime = runtime
        return eventLoop.submit { JSContextGroupEnableSamplingProfiler(runtime.value.group) }
    }

    /// Stops the sampling profiler and returns the samples taken since it started, as
    /// JavaScriptCore's JSON (`{"traces": [{"frames": [...]}]}`, the top of each stack first).
    public func stopSampling() -> EventLoopFuture<String> {
        let runtime = runtime
        return eventLoop.submit {
            let group = runtime.value.group
            let text = JSContextGroupTakeSamplesFromSamplingProfiler(group).map { ref in
                defer { JSStringRelease(ref) }
                return String(jsString: ref)
            } ?? "{}"
            JSContextGroupDisableSamplingProfiler(group)
            return text
        }
    }
}
