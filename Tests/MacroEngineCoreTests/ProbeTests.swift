import Testing
@testable import MacroEngineCore
import Foundation

@Test func probe3() throws {
    let engine = MacroEngine(configuration: .init(evalEnabled: true))
    print(try engine.evaluate("var f = (function(){ throw new Error('x') }); Object.defineProperty(f, 'name', {value: 'named'}); try { f() } catch (e) { e.stack }"))
    print(try engine.evaluate("var g = (function(){ throw new Error('x') }); g.displayName = 'disp'; try { g() } catch (e) { e.stack }"))
    print(try engine.evaluate("var h = (function(){ throw new Error('x') }); try { h() } catch (e) { e.stack }"))
}
