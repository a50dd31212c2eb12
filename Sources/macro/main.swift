import MacroCLI

// `macro`: the command-line tool, without JavaScriptCore. Commands that talk to macrod run here;
// where a command would run the engine in this process, `macro` becomes `macro-local` (exec).
// A command line that certainly runs in-process does so before it is even parsed; should the
// exec fail, the normal path reports it where the command needs macro-local.
if ExecMacroLocal.certainlyInProcess(Array(CommandLine.arguments.dropFirst())), let path = try? ExecMacroLocal.path() {
    ExecMacroLocal.exec(path)
}
MacroCommand.main(inProcess: ExecMacroLocal())
