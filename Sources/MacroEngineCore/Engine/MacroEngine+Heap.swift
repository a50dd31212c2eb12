import CJavaScriptCore
import NIOCore

extension MacroEngine {
    /// The bytes JavaScriptCore's heap holds: its blocks (live objects and garbage not collected
    /// yet) plus what typed arrays, array buffers and long strings hold (`heapCapacity` of its
    /// memory statistics; `heapSize` counts only what the last collection marked). Read on the
    /// engine's loop without forcing a collection. For `macroengine_js_heap_bytes`.
    public func heapBytes() -> EventLoopFuture<Int> {
        let runtime = runtime
        if eventLoop.inEventLoop { return eventLoop.makeSucceededFuture(Self.heapCapacity(runtime.value.globalContext)) }
        return eventLoop.submit { Self.heapCapacity(runtime.value.globalContext) }
    }

    private static func heapCapacity(_ ctx: JSContextRef) -> Int {
        guard let stats = JSGetMemoryUsageStatistics(ctx) else { return 0 }
        let capacity = withJSString("heapCapacity") { key in
            JSObjectGetProperty(ctx, stats, key, nil).map { JSValueToNumber(ctx, $0, nil) } ?? 0
        }
        return capacity.isFinite && capacity >= 0 ? Int(capacity) : 0
    }
}
