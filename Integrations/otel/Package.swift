// swift-tools-version:6.1
import PackageDescription

// macro-otel: exports macrod's run records as OpenTelemetry spans (swift-otel). A package of its
// own, so the root package, `make test` and CI never build swift-otel (its first build takes
// minutes: docs/observability.md, "OpenTelemetry spans"). `make otel` builds it, `make otel-test`
// checks it end to end against a real macrod and an OTLP/HTTP receiver.
let package = Package(
    name: "macro-otel",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "macro-otel", targets: ["macro-otel"])
    ],
    dependencies: [
        // The root package, for MacroRPC (the socket client, the socket path rules) alone.
        .package(name: "MacroEngine", path: "../.."),
        // Only the OTLP/HTTP exporter (http/protobuf, http/json): the gRPC one would add
        // grpc-swift to the build.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.2.0"),
    ],
    targets: [
        // What needs no exporter: reading run records from macrod, turning one into a span
        // (any swift-distributed-tracing Tracer), the watermark of what was exported.
        .target(
            name: "MacroOTel",
            dependencies: [
                .product(name: "MacroRPC", package: "MacroEngine"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The command: options, help, swift-otel's tracer and the service group.
        .executableTarget(
            name: "macro-otel",
            dependencies: [
                "MacroOTel",
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Span building and record decoding against swift-distributed-tracing's InMemoryTracer
        // (no swift-otel, no macrod).
        .testTarget(
            name: "MacroOTelTests",
            dependencies: [
                "MacroOTel",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
