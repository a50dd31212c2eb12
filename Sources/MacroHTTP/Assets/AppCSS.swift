extension DashboardAssets {
    /// `/app.css`: light and dark schemes from the system's preference; activity-ring colours.
    static let appCSS = #"""
:root {
  color-scheme: light dark;
  --bg: #f4f5f7; --card: #ffffff; --fg: #17181c; --muted: #5d6270; --line: #d9dce3;
  --accent: #0b63d1; --danger: #b3261e; --ok: #146c2e; --warn: #8a5a00;
  --track: rgba(0, 0, 0, 0.08); --code-bg: #fbfbfc; --error-bg: #fde7e9;
  --ring-0: #00b8c4; --ring-1: #58b800; --ring-2: #e8114a; --ring-3: #8a5cf6; --ring-4: #f59e0b; --ring-5: #0b63d1;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, Ubuntu, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d0e11; --card: #17191e; --fg: #eceef3; --muted: #a3a9b7; --line: #2c3039;
    --accent: #6aa8ff; --danger: #ff8a80; --ok: #7bdc93; --warn: #ffcc66;
    --track: rgba(255, 255, 255, 0.10); --code-bg: #111317; --error-bg: #4a1d22;
    --ring-0: #1eeaef; --ring-1: #92e82a; --ring-2: #fa114f; --ring-3: #b49cff; --ring-4: #ffc14d; --ring-5: #6aa8ff;
  }
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; background: var(--bg); color: var(--fg); line-height: 1.4; }
button, input, select { font: inherit; color: inherit; }
button {
  background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 0.3em 0.8em; cursor: pointer;
}
button:hover { border-color: var(--accent); }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--card); }
button.danger { color: var(--danger); }
button:disabled { opacity: 0.5; cursor: default; }
input, select { background: var(--code-bg); border: 1px solid var(--line); border-radius: 6px; padding: 0.25em 0.5em; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.muted { color: var(--muted); }
.banner {
  position: sticky; top: 0; z-index: 10; margin: 0; padding: 0.7em 1em; text-align: center;
  background: var(--danger); color: var(--card); font-weight: 600;
}
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 1em 2em; padding: 0.8em 1.2em; border-bottom: 1px solid var(--line); background: var(--card); }
.top h1 { font-size: 1.25em; margin: 0; }
.status { display: flex; flex-wrap: wrap; gap: 0.3em 1.5em; margin: 0; }
.status div { display: flex; gap: 0.4em; }
.status dt { color: var(--muted); }
.status dd { margin: 0; font-variant-numeric: tabular-nums; font-weight: 600; }
.link-state { margin-left: auto; color: var(--muted); }
.link-state.online { color: var(--ok); }
.grid { display: grid; gap: 1em; padding: 1em; grid-template-columns: repeat(auto-fit, minmax(22em, 1fr)); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 0.8em 1em; min-width: 0; }
.card h2 { font-size: 1em; margin: 0 0 0.6em; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); }
.editor-card, .log-card, .stats-card, .profile-card { grid-column: 1 / -1; }
.rings { display: block; width: min(100%, 300px); margin: 0 auto; background: #000; border-radius: 50%; }
.ring-track { fill: none; stroke: var(--track); }
@media (prefers-color-scheme: light) { .ring-track { stroke: rgba(255, 255, 255, 0.12); } }
.ring-arc { fill: none; stroke-linecap: round; transition: stroke-dashoffset 0.35s ease-out; }
@media (prefers-reduced-motion: reduce) { .ring-arc { transition: none; } }
.ring-0 { stroke: var(--ring-0); color: var(--ring-0); } .ring-1 { stroke: var(--ring-1); color: var(--ring-1); }
.ring-2 { stroke: var(--ring-2); color: var(--ring-2); } .ring-3 { stroke: var(--ring-3); color: var(--ring-3); }
.ring-4 { stroke: var(--ring-4); color: var(--ring-4); } .ring-5 { stroke: var(--ring-5); color: var(--ring-5); }
.legend { list-style: none; padding: 0; margin: 0.8em 0 0; display: flex; flex-wrap: wrap; justify-content: center; gap: 0.4em 1.4em; }
.legend li { display: flex; align-items: center; gap: 0.4em; }
.legend .swatch { width: 0.8em; height: 0.8em; border-radius: 50%; background: currentColor; }
.legend .value { font-variant-numeric: tabular-nums; font-weight: 600; color: var(--fg); }
.macros { list-style: none; padding: 0; margin: 0; display: grid; gap: 0.6em; }
.macro { border: 1px solid var(--line); border-radius: 8px; padding: 0.5em 0.7em; }
.macro.broken { border-color: var(--danger); }
.macro-head { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5em; }
.macro-name { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 600; }
.badge { font-size: 0.8em; border-radius: 999px; padding: 0 0.6em; border: 1px solid currentColor; }
.badge.error { color: var(--danger); }
.params { display: flex; flex-wrap: wrap; gap: 0.4em 0.8em; margin-top: 0.4em; }
.params label { display: flex; align-items: center; gap: 0.3em; font-size: 0.9em; color: var(--muted); }
.params input { width: 7em; }
.macro-actions { margin-left: auto; display: flex; gap: 0.4em; }
.outcome { margin: 0.4em 0 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85em; white-space: pre-wrap; word-break: break-word; }
.outcome:empty { display: none; }
.outcome.ok { color: var(--ok); }
.outcome.error, .diagnostic.error, .macro-error { color: var(--danger); }
.macro-error { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85em; margin: 0.3em 0 0; }
.toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5em; margin-bottom: 0.6em; }
.editor { border: 1px solid var(--line); border-radius: 8px; overflow: hidden; min-height: 16em; }
.editor .CodeMirror { height: 22em; font-size: 0.95em; background: var(--code-bg); color: var(--fg); }
.editor .CodeMirror-gutters { background: var(--card); border-right: 1px solid var(--line); }
.editor .CodeMirror-linenumber { color: var(--muted); }
.editor .CodeMirror-cursor { border-left-color: var(--fg); }
.editor .CodeMirror-selected { background: rgba(100, 150, 255, 0.25); }
.editor .error-line { background: var(--error-bg); }
.editor .error-marker { color: var(--danger); font-weight: 700; padding-left: 2px; }
@media (prefers-color-scheme: dark) {
  .editor .CodeMirror .cm-keyword { color: #ff7ab2; } .editor .CodeMirror .cm-def { color: #6bdfff; }
  .editor .CodeMirror .cm-variable-2 { color: #a2d4ff; } .editor .CodeMirror .cm-string { color: #ffa14f; }
  .editor .CodeMirror .cm-number { color: #d9c97c; } .editor .CodeMirror .cm-comment { color: #8d9aa6; }
  .editor .CodeMirror .cm-property { color: #a6e3a1; } .editor .CodeMirror .cm-atom { color: #d9c97c; }
  .editor .CodeMirror .cm-variable, .editor .CodeMirror .cm-operator { color: #eceef3; }
  .editor .CodeMirror .cm-bracket, .editor .CodeMirror .cm-punctuation { color: #c8ccd6; }
  .editor .CodeMirror-matchingbracket { color: #7bdc93 !important; }
}
.plain-editor { display: flex; height: 22em; background: var(--code-bg); font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.95em; }
.plain-editor .gutter { margin: 0; padding: 0.5em 0.5em; text-align: right; color: var(--muted); background: var(--card); border-right: 1px solid var(--line); overflow: hidden; user-select: none; list-style: none; min-width: 3em; }
.plain-editor .gutter li { line-height: 1.4em; }
.plain-editor .gutter li.error-line { color: var(--card); background: var(--danger); border-radius: 3px; }
.plain-editor textarea { flex: 1; border: 0; border-radius: 0; resize: none; padding: 0.5em; margin: 0; line-height: 1.4em; background: transparent; white-space: pre; overflow: auto; tab-size: 4; font: inherit; }
.diagnostic { min-height: 1.4em; margin: 0.5em 0 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; white-space: pre-wrap; }
.diagnostic.ok { color: var(--ok); }
.running { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
/* position: relative contains the absolutely positioned (visually hidden) header text, which
   otherwise escaped the scroller and widened the whole page to 1,240 px (issue 23). */
.table-scroll { overflow-x: auto; position: relative; max-width: 100%; }
.stats { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 0.9em; }
.stats th, .stats td { text-align: right; padding: 0.25em 0.4em; border-bottom: 1px solid var(--line); white-space: nowrap; }
.stats th[scope="row"], .stats .last-error { text-align: left; }
.stats .last-error { white-space: normal; color: var(--danger); min-width: 14em; }
.flame { width: 100%; height: auto; display: block; margin-top: 0.5em; font: 11px ui-monospace, "DejaVu Sans Mono", monospace; }
.flame text { fill: #111; pointer-events: none; }
.flame .frame:hover rect { stroke: var(--fg, #000); stroke-width: 1; }
#profile-runs { width: 6em; }
.running th, .running td { text-align: left; padding: 0.25em 0.4em; border-bottom: 1px solid var(--line); }
.log { list-style: none; margin: 0; padding: 0; max-height: 18em; overflow: auto; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85em; }
.log li { display: flex; gap: 0.8em; padding: 0.1em 0; border-bottom: 1px solid var(--line); }
.log .time { color: var(--muted); }
.log .level { min-width: 5.5em; font-weight: 600; }
.log .level-error, .log .level-critical { color: var(--danger); }
.log .level-warning { color: var(--warn); }
.log .message { white-space: pre-wrap; word-break: break-word; }
footer { padding: 0 1.2em 1.2em; font-size: 0.85em; }
"""#
}
