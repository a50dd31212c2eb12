import CJavaScriptCore

/// The top-level declarations of lib scripts, as globals every macro reads but none can replace.
///
/// A lib script runs as one function, `(function(){` + the file + `return {getters}})`: its
/// top-level functions, `var`s, `let`s, `const`s and classes are that function's, and each is
/// published as a global accessor the engine owns. Reading `setAll` gives the lib's current
/// value (its own code may change it); assigning, deleting or redefining it from anywhere else
/// is a TypeError naming the lib file. So a macro cannot swap a helper that other macros call
/// for code of its own (which would then run, and stall, inside their calls, and be blamed on
/// them). A reload swaps the values behind the same names, only once the new version's top
/// level has run through.
extension JSRuntime {
    /// The script that runs lib file `source` with `names` (its top-level declarations) published.
    static func libScriptText(_ source: String, names: [String]) -> (text: String, shift: Int) {
        let header = "(function(){"
        let getters = names.map { "get \"\($0)\"(){return \($0);}" }.joined(separator: ",")
        return (header + source + "\nreturn {" + getters + "};\n})", header.count)
    }

    /// Names `factory` (a file's wrapper function) `global code` in stacks, as a script's top level is.
    func nameTopLevel(_ factory: JSObjectRef) {
        let hidden = JSPropertyAttributes(kJSPropertyAttributeDontEnum | kJSPropertyAttributeReadOnly)
        withJSString("displayName") { key in
            JSObjectSetProperty(context.ref, factory, key, context.string("global code").ref, hidden, nil)
        }
    }

    /// Publishes `getters` (an object of getter functions, one per name) as `file`'s globals.
    func publishLibGlobals(file: String, getters: JSValue) throws {
        let define = try libGlobalHelper()
        _ = try call(define, arguments: [context.string(file).ref, getters.ref], macro: nil)
    }

    private func libGlobalHelper() throws -> JSObjectRef {
        if let libGlobalDefineRef { return libGlobalDefineRef }
        // Built-ins are captured before any macro runs (as the macro globals' helper does).
        let define = try evaluateRaw(
            """
            (function (g) {
              "use strict";
              var defineProperty = Object.defineProperty, describe = Object.getOwnPropertyDescriptor, names = Object.getOwnPropertyNames;
              var owners = Object.create(null);
              function label(file) { var i = file.lastIndexOf("/lib/"); return i < 0 ? file : file.slice(i + 1); }
              function accessor(name) {
                return {
                  get: function () { return owners[name].get(); },
                  set: function () {
                    throw new TypeError("Cannot assign to '" + name + "': it is declared by " + label(owners[name].file) +
                      ", shared by every macro, and only that file changes it");
                  },
                  enumerable: true, configurable: false
                };
              }
              return function (file, getters) {
                var own = names(getters), i, name, existing;
                for (i = 0; i < own.length; i++) {
                  name = own[i];
                  if (name in owners) continue;
                  existing = describe(g, name);
                  if (existing && !existing.configurable)
                    throw new TypeError("'" + name + "' is already a global (an engine global or a macro); rename the lib's declaration");
                }
                for (i = 0; i < own.length; i++) {
                  name = own[i];
                  if (!(name in owners)) defineProperty(g, name, accessor(name));
                  owners[name] = { file: file, get: describe(getters, name).get };
                }
                // What this file declared before and no longer does reads as undefined.
                for (name in owners) {
                  if (owners[name].file === file && own.indexOf(name) < 0) owners[name] = { file: file, get: function () { return undefined; } };
                }
              };
            })(globalThis)
            """, file: nil)
        guard let object = define.objectRef else { throw MacroError(code: .threw, message: "the engine's lib-global helper did not evaluate") }
        JSValueProtect(context.ref, object)
        libGlobalDefineRef = object
        return object
    }
}

extension ShapeCheck {
    /// The names a lib script declares at top level (functions, variables, classes), nil when
    /// acorn cannot parse it as a script (the engine then reports its error).
    func topLevelNames(of source: String, file: String) throws -> [String]? {
        let names = try loadedFunction(Self.topLevelNamesScript, cache: &topLevelNamesRef, file: file)
        guard let context = parserContext else { return nil }
        var exception: JSValueRef?
        var arguments = RootedValues(context, capacity: 1)
        arguments.append(withJSString(source) { JSValueMakeString(context, $0) })
        let result = arguments.withArguments { JSObjectCallAsFunction(context, names, nil, $1, $0, &exception) }
        guard exception == nil, let result, JSValueIsString(context, result), let text = Self.string(result, in: context) else { return nil }
        guard case .array(let items) = try? JSONParser.parse(text) else { return nil }
        return items.compactMap(\.stringValue)
    }

    static let topLevelNamesScript = """
        (function (source) {
          "use strict";
          var ast;
          try { ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script" }); } catch (e) { return null; }
          var names = [];
          function add(name) { if (names.indexOf(name) < 0) names.push(name); }
          function pattern(p) {
            if (!p) return;
            switch (p.type) {
              case "Identifier": add(p.name); break;
              case "ObjectPattern": p.properties.forEach(function (q) { pattern(q.type === "RestElement" ? q.argument : q.value); }); break;
              case "ArrayPattern": p.elements.forEach(pattern); break;
              case "AssignmentPattern": pattern(p.left); break;
              case "RestElement": pattern(p.argument); break;
            }
          }
          ast.body.forEach(function (s) {
            if ((s.type === "FunctionDeclaration" || s.type === "ClassDeclaration") && s.id) add(s.id.name);
            else if (s.type === "VariableDeclaration") s.declarations.forEach(function (d) { pattern(d.id); });
          });
          return JSON.stringify(names);
        })
        """
}
