import Synchronization

/// Lets exactly one of two racing completions (the heap reading, its timeout) answer a scrape.
final class ScrapeOnce: Sendable {
    private let done = Atomic<Bool>(false)

    /// True for the first caller only.
    func claim() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}
