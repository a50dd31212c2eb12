// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "MacroEngine",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MacroEngineCore", targets: ["MacroEngineCore"]),
        .executable(name: "macro", targets: ["macro"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
    ],
    targets: [
        // WebKitGTK's JavaScriptCore C API, plus the exported functions it has no public header for.
        .systemLibrary(
            name: "CJavaScriptCore",
            pkgConfig: "javascriptcoregtk-4.1",
            providers: [.apt(["libjavascriptcoregtk-4.1-dev"])]
        ),
        // The engine, the progress model, macro files on disk and the config.
        .target(
            name: "MacroEngineCore",
            dependencies: [
                "CJavaScriptCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // The `macro` command-line tool.
        .executableTarget(
            name: "macro",
            dependencies: [
                "MacroEngineCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Helpers shared by the test targets: temporary directories, running the built binaries.
        .target(
            name: "MacroTestSupport",
            dependencies: ["MacroEngineCore", .product(name: "Logging", package: "swift-log")],
            path: "Tests/MacroTestSupport"
        ),
        .testTarget(
            name: "MacroEngineCoreTests",
            dependencies: ["MacroEngineCore", "MacroTestSupport"]
        ),
        .testTarget(
            name: "MacroCLITests",
            dependencies: ["MacroTestSupport", "MacroEngineCore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
