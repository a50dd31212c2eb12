import Foundation
import MacroEngineCore
import Synchronization

/// What the dashboard serves besides the API: its own page (the files in `MacroHTTP/Web/`,
/// compiled into the binary by the EmbedWebAssets plugin as `DashboardAssets`, so an installed
/// macrod needs no resource folder) and, when Debian's `libjs-codemirror` is installed,
/// CodeMirror's files from `/usr/share/javascript/codemirror`. The page has no inline script or
/// style: the Content-Security-Policy allows files from this server only.
final class StaticFiles: Sendable {
    /// One file to serve.
    struct File: Sendable {
        let contentType: String
        let body: [UInt8]
    }

    /// Where Debian's libjs-codemirror puts CodeMirror 5.
    let codeMirrorRoot: String
    private let cache = Mutex<[String: File]>([:])

    init(codeMirrorRoot: String = "/usr/share/javascript/codemirror") {
        self.codeMirrorRoot = codeMirrorRoot
    }

    /// True when CodeMirror's script is installed.
    var hasCodeMirror: Bool { FileManager.default.isReadableFile(atPath: codeMirrorRoot + "/lib/codemirror.js") }

    /// The page's own files.
    static let page: [String: File] = [
        "/": File(contentType: "text/html; charset=utf-8", body: Array(DashboardAssets.indexHTML.utf8)),
        "/app.js": File(contentType: "text/javascript; charset=utf-8", body: Array(DashboardAssets.appJS.utf8)),
        "/editor.js": File(contentType: "text/javascript; charset=utf-8", body: Array(DashboardAssets.editorJS.utf8)),
        "/stats.js": File(contentType: "text/javascript; charset=utf-8", body: Array(DashboardAssets.statsJS.utf8)),
        "/debugger.js": File(contentType: "text/javascript; charset=utf-8", body: Array(DashboardAssets.debuggerJS.utf8)),
        "/history.js": File(contentType: "text/javascript; charset=utf-8", body: Array(DashboardAssets.historyJS.utf8)),
        "/records.js": File(contentType: "text/javascript; charset=utf-8", body: Array(DashboardAssets.recordsJS.utf8)),
        "/app.css": File(contentType: "text/css; charset=utf-8", body: Array(DashboardAssets.appCSS.utf8)),
        "/favicon.svg": File(contentType: "image/svg+xml", body: Array(DashboardAssets.faviconSVG.utf8)),
    ]

    /// The CodeMirror file at `path` (below `/codemirror/`), or nil: only `.js` and `.css`
    /// files inside the root are served, no `..`, no hidden names, no symlink out of it.
    func codeMirror(_ path: String) -> File? {
        let relative = path.dropFirst("/codemirror/".count)
        let components = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard !components.isEmpty, components.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") }),
            relative.hasSuffix(".js") || relative.hasSuffix(".css")
        else { return nil }
        if let cached = cache.locked({ $0[String(relative)] }) { return cached }
        let full = URL(fileURLWithPath: codeMirrorRoot + "/" + relative).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: codeMirrorRoot).resolvingSymlinksInPath().path
        guard full.hasPrefix(root + "/"), let data = FileManager.default.contents(atPath: full) else { return nil }
        let file = File(contentType: relative.hasSuffix(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8", body: Array(data))
        cache.locked { $0[String(relative)] = file }
        return file
    }
}
