import MacroCLI

// `macro`: the command-line tool, without JavaScriptCore. Commands that talk to macrod run here;
// where a command would run the engine in this process, `macro` becomes `macro-local` (exec).
MacroCommand.main(inProcess: ExecMacroLocal())
