// MacroValue, its JSON, MacroError, MacroName, the config and the version live in MacroBase, a
// module without JavaScriptCore, so that the thin `macro` and the wire protocol (MacroRPC) use
// them without loading the engine. Re-exported here, once for the whole module: the engine's
// files, the daemon, embedders and the tests that `import MacroEngineCore` see them as before.
@_exported import MacroBase
