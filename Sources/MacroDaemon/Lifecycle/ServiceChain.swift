import Logging
import ServiceLifecycle

/// macrod's services in the order a `ServiceGroup` shuts them down, reversed: each is stopped
/// (and waited for) before the one appended before it. Each also starts only once another has
/// started, by default the one appended before it (a service appended with `startingAfter:`
/// is left out of that sequence), so the start runs in order too, whatever order the group's
/// tasks run in; and a start that is under way when graceful shutdown begins finishes first (a
/// restarted macrod still adopts the connections handed over to it).
struct ServiceChain {
    private var links: [(service: any DaemonService, after: (any DaemonService)?)] = []
    /// The last service appended without `startingAfter:`.
    private var last: (any DaemonService)?

    /// An empty chain.
    init() {}

    /// Appends `service`, to stop before the services appended before it, and to start after
    /// `after` has started (default: the last service appended without `startingAfter:`).
    mutating func append(_ service: any DaemonService, startingAfter after: (any DaemonService)? = nil) {
        if let after {
            links.append((service, after))
        } else {
            links.append((service, last))
            last = service
        }
    }

    /// A `ServiceGroup` of the services (its own logging off: the services log what matters). It
    /// shuts down gracefully when its parent does (macrod's group: SIGTERM, SIGINT).
    func group() -> ServiceGroup {
        ServiceGroup(configuration: .init(services: configurations, logger: Logger(label: "macrod.services") { _ in SwiftLogNoOpLogHandler() }))
    }

    /// The services for a `ServiceGroup`: any of them failing, or returning by itself (the socket
    /// listener when a shutdown was carried over a restart), shuts the group down gracefully.
    var configurations: [ServiceGroupConfiguration.ServiceConfiguration] {
        var gates: [ObjectIdentifier: StartGate] = [:]
        for link in links { gates[ObjectIdentifier(link.service)] = StartGate() }
        return links.map { link in
            let service = StagedService(
                part: link.service, after: link.after.flatMap { gates[ObjectIdentifier($0)] }, started: gates[ObjectIdentifier(link.service)]!)
            return .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
        }
    }
}

/// A ``DaemonService`` as a swift-service-lifecycle `Service`.
struct StagedService: Service, CustomStringConvertible {
    let part: any DaemonService
    /// Opened when the part it follows started (nil: the first).
    let after: StartGate?
    /// Opened once this part started, failed when it did not.
    let started: StartGate

    /// The part's type, as the group names it.
    var description: String { String(describing: type(of: part)) }

    /// Waits for the part it follows, starts, serves, stops.
    func run() async throws {
        guard await after?.wait() ?? true else {
            // A part before it could not start: it never starts, and waits for its turn in the
            // group's shutdown (returning before it would cut the shutdown's order short).
            started.fail()
            try? await gracefulShutdown()
            return
        }
        do {
            try await part.start()
        } catch {
            started.fail()
            throw error
        }
        started.open()
        await part.serve()
        try await part.stop()
    }
}
