import MacroCLI

// `macro-local`: the half of `macro` that runs the engine in this process. `macro` execs it, with
// the same arguments, for the commands that run macros in-process (see README, "A thin macro");
// it parses the same command line as `macro` and answers exactly as `macro` would.
MacroCommand.main(inProcess: InThisProcess())
