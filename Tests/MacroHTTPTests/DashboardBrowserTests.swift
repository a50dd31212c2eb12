import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// The dashboard in a real browser: Tests/Browser/dashboard_check.py drives headless Chromium
/// (Debian's chromium and chromium-driver, through selenium from PyPI; `make test` installs them)
/// against a real macrod. It fails, never skips, when the browser or selenium is missing.
/// Screenshots go to `$MACROENGINE_TEST_OUTPUT/dashboard` (default `.build/test-output/dashboard`).
@Suite("Dashboard in Chromium", .serialized)
struct DashboardBrowserTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// `$MACROENGINE_BROWSER_PYTHON`, else the virtual environment `make test` creates.
    static var python: String {
        if let python = ProcessInfo.processInfo.environment["MACROENGINE_BROWSER_PYTHON"], !python.isEmpty { return python }
        return packageRoot + "/.build/browser-venv/bin/python"
    }

    static var outputDirectory: String {
        let base =
            ProcessInfo.processInfo.environment["MACROENGINE_TEST_OUTPUT"].flatMap { $0.isEmpty ? nil : $0 }
            ?? packageRoot + "/.build/test-output"
        return base + "/dashboard"
    }

    @Test func theDashboardWorksInHeadlessChromium() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.python),
            "no Python with selenium at \(Self.python): run `make test` (it creates .build/browser-venv and installs chromium, chromium-driver and libjs-codemirror)")
        let dashboard = try DashboardDaemon(
            files: [
                "bump.js": try String(contentsOfFile: Self.packageRoot + "/macros/bump.js", encoding: .utf8),
                // Shared code: listed apart, not as a macro.
                "lib/rings.js": try String(contentsOfFile: Self.packageRoot + "/macros/lib/rings.js", encoding: .utf8),
                // A runaway synchronous call, stopped by Cancel long before its time limit.
                "spin.js": "// spin(): never returns.\nfunction() {\n    while (true) {}\n}\n",
                "chatty.js": "function() {\n    console.log(\"hello from chatty\");\n    return 1;\n}\n",
                // Statistics: throws when asked to.
                "flaky.js": "function(fail) {\n    if (fail) throw new Error(\"asked to fail\");\n    return 1;\n}\n",
                // Profile: hot() takes most of the time.
                "heavy.js":
                    "function() {\n    function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * Math.sin(i); return s; }\n    function cold(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }\n    return hot(2e6) + cold(1e5);\n}\n",
            ],
            config: "time_limit_ms: 600000\ncall_deadline_ms: 600000\n")
        try? FileManager.default.removeItem(atPath: Self.outputDirectory)
        let url = try Self.oneTimeURL(dashboard)
        // The harness stops macrod, then starts it again on the same port and socket (a new token).
        let restart = [
            BinaryRunner.binDirectory + "/macrod", "--socket", dashboard.daemon.socket, "--macros", dashboard.daemon.macros,
            "--state", dashboard.daemon.state, "--config", dashboard.daemon.dir.url("config.yaml"), "--http", "127.0.0.1:\(dashboard.port)",
        ]
        let result = try BinaryRunner.run(
            Self.python,
            [
                Self.packageRoot + "/Tests/Browser/dashboard_check.py",
                "--url", url, "--socket", dashboard.daemon.socket, "--macro", BinaryRunner.binDirectory + "/macro",
                "--macros-dir", dashboard.daemon.macros, "--out", Self.outputDirectory, "--daemon-pid", "\(dashboard.daemon.pid)",
                "--restart", MacroValue.array(restart.map { .string($0) }).jsonText(),
            ])
        print(result.stdout)
        #expect(result.status == 0, "\(result)\n--- macrod\n\(dashboard.daemon.log)")
        #expect(result.stdout.contains("browser: 29 passed, 0 failed"), "\(result.stdout)")
        for screenshot in ["dashboard.png", "debugger-1280x800.png", "broken-save.png", "running.png", "history.png", "runs.png", "dashboard-dark.png", "daemon-gone.png"] {
            #expect(FileManager.default.fileExists(atPath: Self.outputDirectory + "/" + screenshot), "\(screenshot) missing")
        }
    }

    /// The URL a user opens: `macro dashboard --no-open`'s, with a one-time code (not the token).
    static func oneTimeURL(_ dashboard: DashboardDaemon) throws -> String {
        let printed = try BinaryRunner.macro("dashboard", "--no-open", "--socket", dashboard.daemon.socket)
        guard printed.status == 0, printed.stdout.hasPrefix("http://127.0.0.1:\(dashboard.port)/?code=") else {
            throw HTTPProbe.ProbeError("macro dashboard --no-open: \(printed)")
        }
        return printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A CodeMirror folder that does not exist.
    private var missingCodeMirror: String { "/nonexistent/codemirror" }

    /// Also: an engine stall makes macrod re-execute itself, and the page reconnects by itself.
    @Test func withoutCodeMirrorThePlainEditorMarksTheErrorLine() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python), "no Python with selenium at \(Self.python): run `make test`")
        let dashboard = try DashboardDaemon(
            files: [
                "bump.js": try String(contentsOfFile: Self.packageRoot + "/macros/bump.js", encoding: .utf8),
                // An endless chain of promise jobs: the engine stalls and macrod re-executes itself.
                "chain.js": "async function() {\n    for (;;) { await null; }\n}\n",
            ],
            config: "time_limit_ms: 300\nstall_grace_ms: 300\n",
            environment: ["MACROENGINE_CODEMIRROR_DIR": missingCodeMirror])
        let output = Self.outputDirectory + "-plain"
        try? FileManager.default.removeItem(atPath: output)
        let url = try Self.oneTimeURL(dashboard)
        let result = try BinaryRunner.run(
            Self.python,
            [
                Self.packageRoot + "/Tests/Browser/dashboard_check.py", "--plain-editor",
                "--url", url, "--socket", dashboard.daemon.socket, "--macro", BinaryRunner.binDirectory + "/macro",
                "--macros-dir", dashboard.daemon.macros, "--out", output, "--daemon-pid", "\(dashboard.daemon.pid)",
            ])
        print(result.stdout)
        #expect(result.status == 0, "\(result)\n--- macrod\n\(dashboard.daemon.log)")
        #expect(result.stdout.contains("browser: 5 passed, 0 failed"), "\(result.stdout)")
    }
}
