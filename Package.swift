// swift-tools-version:6.0
import PackageDescription

/// The call path's targets: release builds leave out the run-time exclusivity checks of class
/// properties (make bench-ladder --cpu-time, MacroEngineCore alone: step 6, the call, 3,480 ->
/// 3,230 ns; its run record 680 -> 490 ns; docs/performance.md). The compile-time checks stay,
/// and every test runs a debug build, where the run-time checks are on.
let hotPathSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "MacroEngine",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MacroEngineCore", targets: ["MacroEngineCore"]),
        // The wire protocol (RPCClient, SocketPath) and MacroValue, its JSON, for packages beside
        // this one: Integrations/otel's macro-otel builds against them without the engine.
        .library(name: "MacroRPC", targets: ["MacroRPC", "MacroBase"]),
        .executable(name: "macro", targets: ["macro"]),
        .executable(name: "macro-local", targets: ["macro-local"]),
        .executable(name: "macrod", targets: ["macrod"]),
        .executable(name: "macro-bench", targets: ["macro-bench"]),
        .executable(name: "macro-fuzz", targets: ["macro-fuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // WebKitGTK's JavaScriptCore C API, plus the exported functions it has no public header for.
        .systemLibrary(
            name: "CJavaScriptCore",
            pkgConfig: "javascriptcoregtk-4.1",
            providers: [.apt(["libjavascriptcoregtk-4.1-dev"])]
        ),
        // ThreadSanitizer's annotation functions, declared for `make sanitize` builds (-DTSAN).
        .target(name: "CThreadSanitizer"),
        // JavaScriptCore's options, set in the environment before main (before any thread exists).
        .target(name: "CJSCStartup"),
        // The system calls Glibc's Swift module does not expose (memfd_create, malloc_trim, epoll, accept4).
        .target(name: "CSystemShims"),
        // C's "%.2f" without Swift's variadic bridge, for `macro`'s progress lines (its header says why).
        .target(name: "CFormat"),
        // What both sides share and that needs no JavaScriptCore: MacroValue and its JSON parser
        // and writer, MacroError, macro names, the config (YAML), atomic files, the version. The
        // thin `macro` and the wire protocol build on it without the engine.
        .target(
            name: "MacroBase",
            dependencies: [
                "CSystemShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: hotPathSettings
        ),
        // The engine, the progress model and macro files on disk (re-exports MacroBase).
        .target(
            name: "MacroEngineCore",
            dependencies: [
                "MacroBase", "CJavaScriptCore", "CThreadSanitizer", "CJSCStartup", "CSystemShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: hotPathSettings
        ),
        // The wire protocol, shared by macrod and its clients: the JSON-RPC codec, error codes,
        // socket path rules, a blocking client. No JavaScriptCore.
        .target(
            name: "MacroRPC",
            dependencies: [
                "MacroBase",
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: hotPathSettings
        ),
        // macrod's server: JSON-RPC over a Unix socket, live reload, lifecycle.
        .target(
            name: "MacroDaemon",
            dependencies: [
                "MacroEngineCore", "MacroRPC", "CSystemShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: hotPathSettings
        ),
        // The dashboard: HTTP, a WebSocket carrying the socket's JSON-RPC, the page and its assets.
        // The page's files (Web/) are not resources: EmbedWebAssets compiles them into the binary,
        // which is installed alone (Plugins/EmbedWebAssets/plugin.swift says why).
        .target(
            name: "MacroHTTP",
            dependencies: [
                "MacroDaemon", "MacroEngineCore", "MacroRPC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            // Web/'s checker configuration and declarations: `make web-check`'s, not the page's.
            exclude: ["Web/tsconfig.json", "Web/globals.d.ts"],
            plugins: ["EmbedWebAssets"]
        ),
        // Writes the dashboard's web files into a Swift file (`enum DashboardAssets`) at build time.
        .executableTarget(name: "embed-web-assets"),
        .plugin(name: "EmbedWebAssets", capability: .buildTool(), dependencies: ["embed-web-assets"]),
        // The `macrod` daemon executable.
        .executableTarget(
            name: "macrod",
            dependencies: [
                "MacroDaemon", "MacroEngineCore", "MacroRPC", "MacroHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The `macro` commands (swift-argument-parser): options, help, completions, everything
        // that talks to macrod, and the output. No JavaScriptCore: the parts that run the engine
        // in-process are `macro-local`'s.
        .target(
            name: "MacroCLI",
            dependencies: [
                "MacroBase", "MacroRPC", "CFormat",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The `macro` command-line tool: MacroCLI, and an exec of `macro-local` where a command
        // runs the engine in-process. Links no JavaScriptCore.
        .executableTarget(
            name: "macro",
            dependencies: [
                "MacroCLI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["link"],
            // `macro run` is a whole process per call, and most of its time is the start
            // (docs/performance.md): in release builds `macro` links the Swift runtime and
            // Foundation statically (-static-stdlib), where `macro-local` and `macrod` share them
            // as shared libraries (the Makefile's RELEASE_FLAGS; the package installs them once,
            // in /usr/lib/macroengine): loading and binding a dozen shared libraries would more
            // than double its start (docs/performance.md, "Installed size"). lld packs the
            // ~78,000 relative relocations of the position-independent binary (DT_RELR, glibc
            // 2.36), and link/libstdc++.so makes libstdc++ static, so no libstdc++.so is loaded
            // and relocated. The binary stays PIE.
            linkerSettings: [
                .unsafeFlags([
                    "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                    "-L", Context.packageDirectory + "/Sources/macro/link",
                ]),
                // The modules are compiled for the shared Foundation (the build's flags are the
                // other binaries'), whose shared libraries carry CoreFoundation, its shims,
                // collections and ICU inside; linked statically, those are archives of their
                // own in the toolchain's swift_static, named here. `make release-check` checks
                // that macro loads no Swift library.
                .unsafeFlags(["-static-stdlib", "-lCoreFoundation", "-l_FoundationCShims", "-l_FoundationCollections", "-l_FoundationICU"], .when(configuration: .release)),
            ]
        ),
        // `macro-local`: the same commands, with their in-process parts (the engine, the macros
        // directory, the state file). `macro` execs it; it is installed beside `macro`.
        .executableTarget(
            name: "macro-local",
            dependencies: [
                "MacroCLI", "MacroEngineCore", "MacroRPC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `make bench`: macrod vs Redis FCALL, a Node.js server, the minimal server (its hidden
        // `minimal-server` mode), a bare socket and a minimal JavaScriptCore process.
        .executableTarget(
            name: "macro-bench",
            dependencies: [
                "CJavaScriptCore", "CSystemShims", "MacroEngineCore", "MacroDaemon", "MacroRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libFuzzer's driver entry point, declared for `macro-fuzz` (make fuzz).
        .target(name: "CLibFuzzer"),
        // The fuzz targets (JSON-RPC lines, macro files); `macro-fuzz` runs them, tests replay the corpus.
        .target(
            name: "MacroFuzz",
            dependencies: [
                "MacroDaemon", "MacroEngineCore", "MacroRPC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "macro-fuzz", dependencies: ["MacroFuzz", "CLibFuzzer"]),
        // Helpers shared by the test targets: temporary directories, running the built binaries.
        .target(
            name: "MacroTestSupport",
            dependencies: ["MacroEngineCore", "MacroRPC", "CSystemShims", .product(name: "Logging", package: "swift-log")],
            path: "Tests/MacroTestSupport"
        ),
        .testTarget(
            name: "MacroEngineCoreTests",
            dependencies: ["MacroEngineCore", "MacroTestSupport"]
        ),
        // The wire protocol's codec, both halves, without the engine.
        .testTarget(
            name: "MacroRPCTests",
            dependencies: ["MacroRPC", "MacroBase"]
        ),
        .testTarget(
            name: "MacroCLITests",
            dependencies: ["MacroTestSupport", "MacroEngineCore", "MacroRPC", "MacroCLI"]
        ),
        // Drives macrod's service in-process on NIOAsyncTestingChannel (like HummingbirdTesting).
        .target(
            name: "MacroDaemonTesting",
            dependencies: [
                "MacroDaemon", "MacroEngineCore", "MacroRPC", "MacroBase",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "MacroDaemonTests",
            dependencies: [
                "MacroTestSupport", "MacroEngineCore", "MacroRPC", "MacroFuzz", "MacroDaemon", "MacroDaemonTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // The dashboard: plain HTTP security checks, and the page in headless Chromium (Tests/Browser).
        .testTarget(
            name: "MacroHTTPTests",
            dependencies: ["MacroTestSupport", "MacroEngineCore", "MacroRPC", "MacroHTTP"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
