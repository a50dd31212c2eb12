/// The dashboard's page, CSS and scripts, embedded so that an installed macrod needs no resource
/// folder. No inline script or style: the Content-Security-Policy allows files from this server only.
enum DashboardAssets {
    /// `/`: the page.
    static let indexHTML = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>MacroEngine</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/app.css">
<script src="/editor.js" defer></script>
<script src="/app.js" defer></script>
<script src="/stats.js" defer></script>
</head>
<body>
<div id="banner" class="banner" role="alert" hidden></div>
<header class="top">
  <h1>MacroEngine</h1>
  <dl id="status" class="status" aria-label="Daemon status">
    <div><dt>Uptime</dt><dd id="status-uptime">–</dd></div>
    <div><dt>Calls</dt><dd id="status-calls">–</dd></div>
    <div><dt>Errors</dt><dd id="status-errors">–</dd></div>
    <div><dt>Clients</dt><dd id="status-connections">–</dd></div>
  </dl>
  <span id="link-state" class="link-state" role="status">connecting…</span>
</header>
<main class="grid">
  <section class="card rings-card" aria-labelledby="rings-title">
    <h2 id="rings-title">Progress</h2>
    <svg id="rings" class="rings" viewBox="0 0 200 200" aria-hidden="false"></svg>
    <ul id="legend" class="legend"></ul>
  </section>
  <section class="card" aria-labelledby="macros-title">
    <h2 id="macros-title">Macros</h2>
    <ul id="macros" class="macros"></ul>
  </section>
  <section class="card editor-card" aria-labelledby="editor-title">
    <h2 id="editor-title">Editor</h2>
    <div class="toolbar">
      <label for="editor-macro">Macro</label>
      <select id="editor-macro"></select>
      <button type="button" id="editor-save" title="Save (Ctrl+S)">Save</button>
      <button type="button" id="editor-new">New…</button>
      <button type="button" id="editor-rename">Rename…</button>
      <button type="button" id="editor-delete">Delete…</button>
    </div>
    <form id="editor-name-form" class="toolbar" hidden>
      <label for="editor-name" id="editor-name-label">Name</label>
      <input id="editor-name" autocomplete="off" spellcheck="false" pattern="[A-Za-z_$][A-Za-z0-9_$]*" required>
      <button type="submit" id="editor-name-ok">Create</button>
      <button type="button" id="editor-name-cancel">Cancel</button>
    </form>
    <div id="editor-confirm" class="toolbar" hidden>
      <span id="editor-confirm-text"></span>
      <button type="button" id="editor-confirm-ok" class="danger">Delete</button>
      <button type="button" id="editor-confirm-cancel">Keep</button>
    </div>
    <div id="editor" class="editor"></div>
    <p id="editor-diagnostic" class="diagnostic" role="status"></p>
  </section>
  <section class="card" aria-labelledby="running-title">
    <h2 id="running-title">Running calls</h2>
    <table class="running">
      <thead><tr><th scope="col">Call</th><th scope="col">Macro</th><th scope="col">Elapsed</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
      <tbody id="running"></tbody>
    </table>
    <p id="running-empty" class="muted">No call is running.</p>
  </section>
  <section class="card stats-card" aria-labelledby="stats-title">
    <h2 id="stats-title">Statistics</h2>
    <div class="table-scroll">
    <table class="stats">
      <thead><tr><th scope="col">Macro</th><th scope="col">Calls</th><th scope="col">OK</th><th scope="col">Threw</th><th scope="col">Timeout</th><th scope="col">Cancelled</th><th scope="col">Memory</th><th scope="col">p50</th><th scope="col">p95</th><th scope="col">p99</th><th scope="col">Max</th><th scope="col">In JS</th><th scope="col">Reloads</th><th scope="col">Failed</th><th scope="col">Last error</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
      <tbody id="stats"></tbody>
    </table>
    </div>
    <p id="stats-empty" class="muted">No statistics yet.</p>
    <div class="toolbar"><button type="button" id="stats-reset">Reset all</button></div>
  </section>
  <section class="card profile-card" aria-labelledby="profile-title">
    <h2 id="profile-title">Profile</h2>
    <form id="profile-form" class="toolbar">
      <label for="profile-macro">Macro</label>
      <select id="profile-macro"></select>
      <label for="profile-runs">Runs</label>
      <input id="profile-runs" type="number" min="1" max="100000" value="10">
      <button type="submit" id="profile-run">Profile</button>
    </form>
    <p id="profile-message" class="diagnostic" role="status"></p>
    <svg id="flame" class="flame" role="img" aria-label="Flame graph" hidden></svg>
  </section>
  <section class="card log-card" aria-labelledby="log-title">
    <h2 id="log-title">Log</h2>
    <ol id="log" class="log" role="log" aria-label="Daemon log"></ol>
  </section>
</main>
<footer class="muted">macrod <span id="version">–</span> · <span id="socket"></span></footer>
</body>
</html>
"""#

    /// `/favicon.svg`: three rings.
    static let faviconSVG = #"""
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><g fill="none" stroke-width="3"><circle cx="16" cy="16" r="14" stroke="#e0475b"/><circle cx="16" cy="16" r="9.5" stroke="#2fb67c"/><circle cx="16" cy="16" r="5" stroke="#3b82f6"/></g></svg>
"""#
}
