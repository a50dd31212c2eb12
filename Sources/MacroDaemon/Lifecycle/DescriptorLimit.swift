#if canImport(Glibc)
import Glibc
#endif

/// macrod's descriptor limit: the soft limit is raised to the hard one (at most 65,536) at start,
/// as servers do, so a flood of connections meets the dashboard's connection cap and the
/// sockets' bounds long before `accept` and `open` fail with "Too many open files" (under
/// systemd the soft limit is 1,024 and the hard one 524,288).
enum DescriptorLimit {
    /// Raises the soft limit; returns the limit in force afterwards.
    @discardableResult
    static func raise(upTo ceiling: rlim_t = 65_536) -> rlim_t {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        let wanted = min(limit.rlim_max, ceiling)
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return wanted }
        }
        return limit.rlim_cur
    }
}
