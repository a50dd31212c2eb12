import NIOCore

extension MacroEngine {
    /// JavaScriptCore's heap size in bytes (`heapSize` of its memory statistics: live objects plus
    /// garbage not collected yet, and what typed arrays, array buffers and long strings hold),
    /// read on the engine's loop without forcing a collection. For metrics (`macroengine_js_heap_bytes`).
    public func heapBytes() -> EventLoopFuture<Int> {
        let runtime = runtime
        if eventLoop.inEventLoop { return eventLoop.makeSucceededFuture(Watchdog.liveBytes(runtime.value.globalContext)) }
        return eventLoop.submit { Watchdog.liveBytes(runtime.value.globalContext) }
    }
}
