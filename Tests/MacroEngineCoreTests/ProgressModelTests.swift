import MacroEngineCore
import MacroTestSupport
import Synchronization
import Testing

@Suite("Progress model")
struct ProgressModelTests {
    @Test func clampsToTheChannelRange() throws {
        let model = ProgressModel()
        #expect(try model.set("inner", to: 11) == 10)
        #expect(try model.set("inner", to: -0.5) == 0)
        #expect(try model.set("middle", to: 4.25) == 4.25)
        #expect(model.valuesByName == ["inner": 0, "middle": 4.25, "outer": 0])
    }

    @Test func observersHearEveryChangeWithOldAndNewValue() throws {
        let model = ProgressModel()
        let first = Mutex<[ProgressChange]>([]), second = Mutex<[ProgressChange]>([])
        let token = model.addObserver { change in first.locked { $0.append(change) } }
        model.addObserver { change in second.locked { $0.append(change) } }
        try model.set("inner", to: 3)
        try model.set("inner", to: 3)  // unchanged: nobody is told
        try model.set("outer", to: 20)
        model.removeObserver(token)
        try model.set("middle", to: 1)
        let expected = [
            ProgressChange(channel: "inner", oldValue: 0, newValue: 3),
            ProgressChange(channel: "outer", oldValue: 0, newValue: 10),
        ]
        #expect(first.locked { $0 } == expected)
        #expect(second.locked { $0 } == expected + [ProgressChange(channel: "middle", oldValue: 0, newValue: 1)])
    }

    @Test func rejectsNonFiniteValuesAndUnknownChannels() throws {
        let model = ProgressModel()
        let nan = try #require(throws: MacroError.self) { try model.set("inner", to: .nan) }
        #expect(nan.code == .invalidArgument)
        let unknown = try #require(throws: MacroError.self) { try model.set("sideways", to: 1) }
        #expect(unknown.message == "no progress channel named 'sideways' (channels: inner, middle, outer)")
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
    }

    @Test func restoreClampsAndIgnoresUnknownAndNonFinite() {
        let model = ProgressModel()
        model.restore(["inner": 12, "middle": .nan, "outer": 2.5, "bogus": 1])
        #expect(model.valuesByName == ["inner": 10, "middle": 0, "outer": 2.5])
    }

    @Test func publishesTheRingsSixGlobalsAndTheProgressObject() throws {
        let (engine, model, _) = try makeEngine()
        for name in ["getInnerProgress", "setInnerProgress", "getMiddleProgress", "setMiddleProgress", "getOuterProgress", "setOuterProgress"] {
            #expect(try engine.evaluate("typeof \(name)") == "function", "\(name)")
        }
        try engine.evaluate("setInnerProgress(2); setMiddleProgress(getInnerProgress() + 1.5); setOuterProgress(99)")
        #expect(model.valuesByName == ["inner": 2, "middle": 3.5, "outer": 10])
        try engine.evaluate("progress.inner += 1; progress.outer -= 2.5; progress.middle = -4")
        #expect(model.valuesByName == ["inner": 3, "middle": 0, "outer": 7.5])
        #expect(try engine.evaluate("Object.keys(progress).join(',') + '=' + progress.inner") == "inner,middle,outer=3")
        // The object is sealed: a typo does not invent a channel.
        #expect(try engine.evaluate("progress.innr = 5; progress.innr") == .undefined)
    }

    @Test(arguments: [
        ("setInnerProgress(NaN)", "setInnerProgress: expected a finite number, got NaN"),
        ("setInnerProgress('abc')", "setInnerProgress: expected a finite number, got string \"abc\""),
        ("setInnerProgress('5')", "setInnerProgress: expected a finite number, got string \"5\""),
        ("setInnerProgress(undefined)", "setInnerProgress: expected a finite number, got undefined"),
        ("setInnerProgress()", "setInnerProgress: expected a finite number, got no argument"),
        ("setInnerProgress(Infinity)", "setInnerProgress: expected a finite number, got Infinity"),
        ("setInnerProgress(-Infinity)", "setInnerProgress: expected a finite number, got -Infinity"),
        ("setOuterProgress(null)", "setOuterProgress: expected a finite number, got null"),
        ("progress.middle = 'x'", "progress.middle: expected a finite number, got string \"x\""),
        ("progress.inner += undefined", "progress.inner: expected a finite number, got NaN"),
    ])
    func badValuesThrowTypeErrorsAndStoreNothing(_ source: String, _ message: String) throws {
        let (engine, model, _) = try makeEngine()
        try model.set("inner", to: 1)
        try model.set("middle", to: 2)
        try model.set("outer", to: 3)
        let error = try #require(throws: MacroError.self) { try engine.evaluate(source) }
        #expect(error.errorName == "TypeError")
        #expect(error.message == message)
        #expect(model.valuesByName == ["inner": 1, "middle": 2, "outer": 3])
    }

    @Test func channelsComeFromConfiguration() throws {
        let channels = [ProgressChannel(name: "volume", minimum: -5, maximum: 100, initial: 50)]
        let (engine, model, _) = try makeEngine(channels: channels)
        #expect(try engine.evaluate("getVolumeProgress()") == 50)
        try engine.evaluate("setVolumeProgress(-20); progress.volume += 1")
        #expect(try model.value(of: "volume") == -4)
        #expect(try engine.evaluate("typeof setInnerProgress") == "undefined")
    }

    @Test func theDemoTemplateMovesAllRingsWithinRange() throws {
        let (engine, model, _) = try makeEngine()
        let template = try demoTemplate()
        #expect(template.contains("setInnerProgress(currentInner + Math.random());"))
        let method = MacroMethod(javascript: template, key: "random", engine: engine)
        var previous = model.valuesByName
        for _ in 0..<40 {
            try method.call()
            let now = model.valuesByName
            for channel in ["inner", "middle", "outer"] {
                #expect(now[channel]! >= previous[channel]!)
                #expect((0...10).contains(now[channel]!))
            }
            previous = now
        }
        // 40 steps of mean 0.5 reach the top of a 0...10 ring (the chance of not is < 1e-9).
        #expect(previous == ["inner": 10, "middle": 10, "outer": 10])
    }
}
