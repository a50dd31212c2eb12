/// The macros the debugger's tests debug (engine sessions and `macro dap` alike): a lib helper,
/// an async helper, a macro using them, one that throws, one that keeps the engine busy.
public enum DebugFixtures {
    /// File name (under the macros directory) to its text.
    public static let files: [String: String] = [
        "lib/helpers.js": """
        function double(x) {
            var y = x * 2;
            return y;
        }
        async function later(v) {
            await sleep(1);
            return v + 1;
        }
        function fail(why) {
            throw new RangeError(why);
        }
        """,
        "main.js": """
        async function main(n) {
            let total = 0;
            for (let i = 0; i < n; i++) {
                total += double(i);
            }
            let more = await later(total);
            progress.inner = more;
            return more;
        }
        """,
        "thrower.js": """
        function thrower() {
            let note = "";
            try { fail("caught"); } catch (e) { note = e.message; }
            fail("boom " + note);
        }
        """,
        "busy.js": """
        function busy(ms) {
            const start = Date.now();
            while (Date.now() - start < ms) {}
            return "done";
        }
        """,
    ]
}
