import Foundation
import PackagePlugin

/// Embeds the dashboard's web files (the target's `Web/` folder: `.html`, `.css`, `.js`, `.svg`)
/// into the target as generated Swift: `enum DashboardAssets`, one string per file.
///
/// Why not SwiftPM resources (`resources: [.copy("Web")]` and `Bundle.module`)? On Linux
/// `Bundle.module` looks for `MacroEngine_MacroHTTP.resources` beside the executable, then at the
/// absolute path of the build folder it was built in. The Debian package and `make install-user`
/// install only the executables (/usr/bin, ~/.local/bin), so an installed macrod would find the
/// bundle only while the build folder still exists on the same machine, and stop with a fatal
/// error everywhere else. Generated at build time, the page travels inside the binary, and the
/// files in `Web/` stay the single source (the generated Swift is not committed).
@main
struct EmbedWebAssets: BuildToolPlugin {
    /// The kinds of file embedded; others in `Web/` (the type checker's and linter's
    /// configuration, declarations) are not served.
    static let extensions: Set<String> = ["html", "css", "js", "svg"]

    /// One command: `embed-web-assets OUTPUT FILE...`, run when a file changes.
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        // The files SwiftPM hands a plugin: those of Web/ are neither sources nor resources.
        guard let module = target as? SourceModuleTarget else { return [] }
        let inputs: [URL] = module.sourceFiles
            .map { (file: File) -> URL in file.url }
            .filter { (url: URL) -> Bool in
                url.deletingLastPathComponent().lastPathComponent == "Web" && Self.extensions.contains(url.pathExtension)
            }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "DashboardAssets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) web files of \(target.name)",
                executable: try context.tool(named: "embed-web-assets").url,
                arguments: [output.path] + inputs.map { $0.path },
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
