import CJavaScriptCore

extension ProgressModel: MacroEngineSupport {
    /// `getInnerProgress` for channel `inner`.
    public static func getterName(_ channel: String) -> String { "get\(channel.capitalizedFirst)Progress" }
    /// `setInnerProgress` for channel `inner`.
    public static func setterName(_ channel: String) -> String { "set\(channel.capitalizedFirst)Progress" }

    /// Publishes the globals for each channel (`getInnerProgress()`, `setInnerProgress(v)`,
    /// ...) and a `progress` object whose properties read and write the same values
    /// (`progress.inner += 1`). Setting a non-number or non-finite value throws a TypeError
    /// naming the function and stores nothing.
    public func addMacroSupport(engine: MacroEngine) throws {
        for (index, channel) in channels.enumerated() {
            try engine.register(Self.getterName(channel.name)) { () -> Double in self.value(at: index) }
            try engine.register(Self.setterName(channel.name)) { (value: Double) in self.set(at: index, to: value) }
        }
        try engine.installProgressObject(model: self)
        engine.addTurnParticipant(self)
    }
}

extension ProgressModel: TurnParticipant {}

extension MacroEngine {
    /// Defines the read-only global `progress`: a sealed object with one accessor per channel.
    func installProgressObject(model: ProgressModel) throws {
        try sync { runtime in
            runtime.progressChannels += model.channels.map(\.name)
            let context = runtime.context
            // One getter and one setter per channel: no channel name to convert on each access.
            let makeArray = JSObjectMakeArray(context.ref, 0, nil, nil)!
            let accessors = JSValue(makeArray, in: context)
            for (index, channel) in model.channels.enumerated() {
                let get = runtime.makeFunction(
                    name: "get \(channel.name)",
                    fast: { arguments in
                        arguments.context.number(model.value(at: index))
                    })
                // The name for the TypeError, made once (not on every write).
                let property = "progress.\(channel.name)"
                let set = runtime.makeFunction(
                    name: "set \(channel.name)",
                    fast: { arguments in
                        model.set(at: index, to: try MacroEngine.finiteNumber(arguments.first, function: property))
                        return arguments.context.undefined
                    })
                JSObjectSetPropertyAtIndex(context.ref, makeArray, UInt32(index * 2), get.ref, nil)
                JSObjectSetPropertyAtIndex(context.ref, makeArray, UInt32(index * 2 + 1), set.ref, nil)
            }
            let names = runtime.context.string(model.channels.map(\.name).joined(separator: ","))
            let factory = try runtime.evaluateRaw(
                """
                (function (accessors, names) {
                  const progress = {};
                  names.split(",").forEach((name, i) => {
                    Object.defineProperty(progress, name, {
                      get: accessors[2 * i],
                      set: accessors[2 * i + 1],
                      enumerable: true,
                    });
                  });
                  return Object.seal(progress);
                })
                """, file: nil)
            let object = try runtime.call(factory.objectRef!, arguments: [accessors.ref, names.ref], macro: nil)
            runtime.defineGlobal("progress", object, readOnly: true)
        }
    }
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
