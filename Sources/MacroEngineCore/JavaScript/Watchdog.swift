import CJavaScriptCore
import NIOCore

/// Arms JavaScriptCore's execution time limit for one top-level entry into the VM and remembers
/// whether it fired, so a terminated script becomes a `.timeout` error rather than a generic one.
final class Watchdog {
    private let group: JSContextGroupRef
    private(set) var fired = false
    private var armedLimit: Double = -1

    init(group: JSContextGroupRef) { self.group = group }

    /// Sets the limit for the next entry. The watchdog measures from VM entry, so the limit is the
    /// whole budget of the evaluation, native callbacks included.
    func arm(_ limit: Duration) {
        fired = false
        let seconds = max(0.001, Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
        armedLimit = seconds
        JSContextGroupSetExecutionTimeLimit(group, seconds, watchdogShouldTerminate,
                                            Unmanaged.passUnretained(self).toOpaque())
    }

    fileprivate func terminate() -> Bool {
        fired = true
        return true
    }
}

private func watchdogShouldTerminate(_ ctx: JSContextRef?, _ data: UnsafeMutableRawPointer?) -> Bool {
    guard let data else { return true }
    return Unmanaged<Watchdog>.fromOpaque(data).takeUnretainedValue().terminate()
}
