/// How `console.log` shows values, as JavaScript: the engine's `console` formats its arguments
/// with it, and `macro repl` (in-process and against macrod) shows results with it, so both
/// print a value the same way.
public enum ConsoleFormat {
    /// An expression whose value is `format(args)`: strings as they are, other values inspected
    /// like Node's `util.inspect` (depth 2, `[Circular]` for cycles, `[Function: name]`, errors
    /// with their stack, `Map(n) {...}`, at most 100 items or keys).
    public static let javascript = """
        (function () {
          "use strict";
          function quote(s) { return "'" + String(s).replace(/\\\\/g, "\\\\\\\\").replace(/'/g, "\\\\'").replace(/\\n/g, "\\\\n") + "'"; }
          function key(k) { return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : quote(k); }
          function inspect(v, depth, seen) {
            switch (typeof v) {
              case "string": return depth === 0 ? v : quote(v);
              case "number": return Object.is(v, -0) ? "-0" : String(v);
              case "bigint": return String(v) + "n";
              case "symbol": return v.toString();
              case "undefined": return "undefined";
              case "boolean": return String(v);
              case "function": return "[Function: " + (v.displayName || v.name || "(anonymous)") + "]";
            }
            if (v === null) return "null";
            if (seen.indexOf(v) >= 0) return "[Circular]";
            if (v instanceof Error) return v.stack ? v.name + ": " + v.message + "\\n" + v.stack.split("\\n").map(function (l) { return "    at " + l; }).join("\\n") : v.name + ": " + v.message;
            if (v instanceof Date) return isNaN(v) ? "Invalid Date" : v.toISOString();
            if (v instanceof RegExp) return String(v);
            if (depth > 2) return Array.isArray(v) ? "[Array]" : "[Object]";
            seen = seen.concat([v]);
            var parts;
            if (Array.isArray(v)) {
              parts = v.slice(0, 100).map(function (x) { return inspect(x, depth + 1, seen); });
              if (v.length > 100) parts.push("... " + (v.length - 100) + " more items");
              return parts.length ? "[ " + parts.join(", ") + " ]" : "[]";
            }
            if (v instanceof Map) {
              parts = []; v.forEach(function (val, k) { parts.push(inspect(k, depth + 1, seen) + " => " + inspect(val, depth + 1, seen)); });
              return "Map(" + v.size + ") {" + (parts.length ? " " + parts.join(", ") + " " : "") + "}";
            }
            if (v instanceof Set) {
              parts = []; v.forEach(function (val) { parts.push(inspect(val, depth + 1, seen)); });
              return "Set(" + v.size + ") {" + (parts.length ? " " + parts.join(", ") + " " : "") + "}";
            }
            var keys = Object.keys(v);
            parts = keys.slice(0, 100).map(function (k) {
              var d = Object.getOwnPropertyDescriptor(v, k);
              return key(k) + ": " + (d && d.get ? "[Getter]" : inspect(v[k], depth + 1, seen));
            });
            return parts.length ? "{ " + parts.join(", ") + " }" : "{}";
          }
          return function format(args) {
            return args.map(function (a) { return inspect(a, 0, []); }).join(" ");
          };
        })()
        """
}
