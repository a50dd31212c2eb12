#ifndef MACROENGINE_CJAVASCRIPTCORE_SHIM_H
#define MACROENGINE_CJAVASCRIPTCORE_SHIM_H

#include <JavaScriptCore/JavaScript.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The functions below are exported by libjavascriptcoregtk-4.1 (checked with `nm -D`)
 * but declared only in WebKit's private headers (JSContextRefPrivate.h,
 * JSBasePrivate.h), which the Debian package does not install. */

/* Called by the watchdog when a script has run past the limit; return true to terminate it. */
typedef bool (*JSShouldTerminateCallback)(JSContextRef ctx, void *context);

/* Sets the execution time limit, in seconds, for every context in the group. */
JS_EXPORT void JSContextGroupSetExecutionTimeLimit(JSContextGroupRef group, double limit,
                                                   JSShouldTerminateCallback callback, void *context);

/* Removes the execution time limit of the group. */
JS_EXPORT void JSContextGroupClearExecutionTimeLimit(JSContextGroupRef group);

/* Calls `function(promise, reason)` for each rejected promise nobody handled. */
JS_EXPORT void JSGlobalContextSetUnhandledRejectionCallback(JSGlobalContextRef ctx, JSObjectRef function,
                                                            JSValueRef *exception);

/* Names the context (shown by debuggers and in some diagnostics). */
JS_EXPORT void JSGlobalContextSetName(JSGlobalContextRef ctx, JSStringRef name);

/* Enables or disables eval() and new Function(); `message` is the EvalError text when disabled. */
JS_EXPORT void JSGlobalContextSetEvalEnabled(JSGlobalContextRef ctx, bool enabled, JSStringRef message);

/* The JavaScript stack of the context's VM as text ("#0 f() at file:line", one frame a line).
 * Public in JSContextRef.h of newer WebKit; declared here for 2.50.6. */
JS_EXPORT JSStringRef JSContextCreateBacktrace(JSContextRef ctx, unsigned maxStackSize);

/* Runs a full garbage collection now, on the calling (engine) thread, and returns when it is done. */
JS_EXPORT void JSSynchronousGarbageCollectForDebugging(JSContextRef ctx);

/* Returns an object with heapSize, heapCapacity, extraMemorySize, objectCount, ... */
JS_EXPORT JSObjectRef JSGetMemoryUsageStatistics(JSContextRef ctx);

/* JavaScriptCore's sampling profiler (JSContextRefPrivate.h): starts sampling the group's VM
 * (about once a millisecond), returns false when the build has no profiler. */
JS_EXPORT bool JSContextGroupEnableSamplingProfiler(JSContextGroupRef group);

/* Stops sampling; the samples taken so far are kept until taken. */
JS_EXPORT void JSContextGroupDisableSamplingProfiler(JSContextGroupRef group);

/* The samples taken since the last call, as JSON text ({"traces": [{"frames": [...]}]}, the top
 * of each stack first), and forgets them. */
JS_EXPORT JSStringRef JSContextGroupTakeSamplesFromSamplingProfiler(JSContextGroupRef group);

#ifdef __cplusplus
}
#endif

#endif
