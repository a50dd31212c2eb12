import CJavaScriptCore

extension ProgressModel: MacroEngineSupport {
    /// `getInnerProgress` for channel `inner`.
    public static func getterName(_ channel: String) -> String { "get\(channel.capitalizedFirst)Progress" }
    /// `setInnerProgress` for channel `inner`.
    public static func setterName(_ channel: String) -> String { "set\(channel.capitalizedFirst)Progress" }

    /// Publishes the seed's globals for each channel (`getInnerProgress()`, `setInnerProgress(v)`,
    /// ...) and a `progress` object whose properties read and write the same values
    /// (`progress.inner += 1`). Setting a non-number or non-finite value throws a TypeError
    /// naming the function and stores nothing.
    public func addMacroSupport(engine: MacroEngine) throws {
        for channel in channels {
            let name = channel.name
            try engine.register(Self.getterName(name)) { () -> Double in try self.value(of: name) }
            try engine.register(Self.setterName(name)) { (value: Double) in _ = try self.set(name, to: value) }
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
            let context = runtime.context
            let get = runtime.makeFunction(name: "progress.get") { args in
                let channel = args.first?.string ?? ""
                return context.number(try model.value(of: channel))
            }
            let set = runtime.makeFunction(name: "progress.set") { args in
                let channel = args.first?.string ?? ""
                let value = try MacroEngine.finiteNumber(args.count > 1 ? args[1] : nil, function: "progress.\(channel)")
                _ = try model.set(channel, to: value)
                return context.undefined
            }
            let names = runtime.context.string(model.channels.map(\.name).joined(separator: ","))
            let factory = try runtime.evaluateRaw("""
                (function (get, set, names) {
                  const progress = {};
                  for (const name of names.split(",")) {
                    Object.defineProperty(progress, name, {
                      get() { return get(name); },
                      set(value) { set(name, value); },
                      enumerable: true,
                    });
                  }
                  return Object.seal(progress);
                })
                """, file: nil)
            let object = try runtime.call(factory.objectRef!, arguments: [get.ref, set.ref, names.ref], macro: nil)
            runtime.defineGlobal("progress", object, readOnly: true)
        }
    }
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
