'use strict';
// stats.js defines renderProfilePicker, debugger.js the debugger, history.js showHistory (classic scripts share one global scope).
/* global renderProfilePicker, receiveDebug, breakpointsChanged, debugMacro, debugState, showHistory, showStore, showRuns, runRecorded */

/**
 * The page's element with this id (index.html has every id the scripts ask for without checking).
 * @param {string} id
 * @returns {HTMLElement}
 */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** @param {string} id */
const $input = (id) => /** @type {HTMLInputElement} */ ($(id));
/** @param {string} id */
const $select = (id) => /** @type {HTMLSelectElement} */ ($(id));
/** @param {string} id */
const $button = (id) => /** @type {HTMLButtonElement} */ ($(id));
const SVG = 'http://www.w3.org/2000/svg';

/**
 * The page's state.
 * @typedef {{
 *   socket: WebSocket | null, nextId: number, online: boolean, retryMs: number, connects: number,
 *   pending: Map<number, { resolve: (result: any) => void, reject: (error: RPCError) => void }>,
 *   channels: Channel[], values: Record<string, number>, macros: MacroEntry[], libs?: MacroEntry[], resources?: MacroEntry[],
 *   triggers?: Map<string, TriggerStatus>,
 *   sources: Map<string, { version: number, source: string }>, outcomes: Map<string, { kind: string, text: string }>,
 *   editor: MacroSourceEditor | null, current: string | null, draft?: boolean, nameMode?: string, opening?: number,
 *   config: DashboardConfig | null, statusAt: number, status: EngineStatus | null, pausedShown?: boolean,
 *   timers: number[], token: string | null,
 * }} App
 */

/** @type {App} */
const app = {
  socket: null, nextId: 1, pending: new Map(), online: false, retryMs: 500, connects: 0,
  channels: [], values: {}, macros: [], sources: new Map(), outcomes: new Map(),
  editor: null, current: null, config: null, statusAt: 0, status: null, timers: [], token: null,
};
const TOKEN_KEY = 'macrod.token';
window.dashboard = app;

/** @typedef {Node | string | null | undefined} Child */

/**
 * A new element: `class` sets its class, `onX` adds a listener for X, `true` sets an empty
 * attribute, and `false`, null and undefined set none.
 * @param {string} tag
 * @param {Record<string, string | number | boolean | null | undefined | ((event: Event) => unknown)>} attributes
 * @param {...(Child | Child[])} children
 * @returns {HTMLElement}
 */
function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = String(value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** @param {unknown} value */
function format(value) {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/0$/, '');
  return String(value);
}

// ---- JSON-RPC over the WebSocket ----

/**
 * Calls `method` on macrod over the WebSocket; rejects with the JSON-RPC error.
 * @template {keyof RPCResults} M
 * @param {M} method
 * @param {Record<string, unknown>} [params]
 * @returns {Promise<RPCResults[M]>}
 */
function rpc(method, params) {
  return new Promise((resolve, reject) => {
    if (!app.socket || app.socket.readyState !== WebSocket.OPEN) { reject({ code: 0, message: 'not connected to macrod' }); return; }
    const id = app.nextId++;
    app.pending.set(id, { resolve, reject });
    /** @type {{ jsonrpc: string, id: number, method: string, params?: unknown }} */
    const message = { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    app.socket.send(JSON.stringify(message));
  });
}

// ---- The access token ----
// `macro dashboard` opens `/?code=CODE`: the page trades the one-time code (POST /session, once,
// within 60 s) for the token. A URL with `?token=TOKEN` (engine.status's) gives it directly. The
// token is kept in sessionStorage, which belongs to this origin (scheme, host and port), and
// sent explicitly; never in a cookie, which a browser would send to every port of this host.

async function takeToken() {
  const query = new URLSearchParams(location.search);
  const code = query.get('code'), token = query.get('token');
  if (code !== null || token !== null) {
    query.delete('code');
    query.delete('token');
    const rest = query.toString();
    history.replaceState(null, '', location.pathname + (rest ? `?${rest}` : '') + location.hash);
  }
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  if (code) {
    const response = await fetch('/session', {
      method: 'POST', cache: 'no-store', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }),
    });
    if (!response.ok) throw new Error((await response.text()).trim());
    sessionStorage.setItem(TOKEN_KEY, (await response.json()).token);
  }
  app.token = sessionStorage.getItem(TOKEN_KEY);
  if (!app.token) throw new Error('no access token: open the URL that `macro dashboard` prints');
  if (!/^[0-9a-f]{64}$/.test(app.token)) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw new Error('the access token in the address is not one of macrod\'s: open the URL that `macro dashboard` prints');
  }
}

/**
 * `options` with the token's Authorization header.
 * @param {RequestInit & { headers?: Record<string, string> }} options
 * @returns {RequestInit}
 */
function authorized(options = {}) {
  return { ...options, headers: { ...(options.headers || {}), Authorization: `Bearer ${app.token}` } };
}

function connect() {
  const socket = new WebSocket(`ws://${location.host}/ws`, ['macrod', `macrod.token.${app.token}`]);
  app.socket = socket;
  socket.addEventListener('open', () => {
    app.connects += 1;
    app.online = true;
    app.retryMs = 500;
    $('banner').hidden = true;
    $('link-state').textContent = 'live';
    $('link-state').classList.add('online');
    start().catch((error) => showBanner(`Cannot load the dashboard: ${error.message}`));
  });
  socket.addEventListener('message', (event) => {
    let message;
    try { message = JSON.parse(event.data); } catch (error) { return; }
    for (const item of Array.isArray(message) ? message : [message]) receive(item);
  });
  socket.addEventListener('close', async () => {
    const wasOnline = app.online;
    app.online = false;
    app.socket = null;
    for (const { reject } of app.pending.values()) reject({ code: 0, message: 'macrod went away' });
    app.pending.clear();
    $('link-state').textContent = 'offline';
    $('link-state').classList.remove('online');
    showBanner(wasOnline ? 'macrod went away. Reconnecting…' : 'macrod is not answering. Reconnecting…');
    // A macrod that came back has a new token: this page cannot reconnect with the old one.
    try {
      const probe = await fetch('/config.json', authorized({ cache: 'no-store' }));
      if (probe.status === 401) {
        showBanner('macrod restarted with a new access token: run `macro dashboard` to open the page again.');
        return;
      }
    } catch (error) { /* not answering: try again below */ }
    setTimeout(connect, app.retryMs);
    app.retryMs = Math.min(app.retryMs * 2, 5000);
  });
}

/** @param {string} text */
function showBanner(text) {
  $('banner').textContent = text;
  $('banner').hidden = false;
}

/**
 * One message from macrod: a reply to a pending call, or a notification.
 * @param {{ id?: number | null, result?: unknown, error?: RPCError, method?: string, params?: any }} message
 */
function receive(message) {
  const call = message.id !== undefined && message.id !== null ? app.pending.get(message.id) : undefined;
  if (call && message.id !== undefined && message.id !== null) {
    const { resolve, reject } = call;
    app.pending.delete(message.id);
    if (message.error) reject(message.error); else resolve(message.result);
    return;
  }
  if (receiveDebug(message.method, message.params)) return;
  switch (message.method) {
    case 'progress.changed': updateValues(message.params); break;
    case 'macro.loaded':
      scheduleMacros();
      if (message.params && message.params.name === app.current) showHistory(app.current);
      break;
    case 'macro.failed': case 'macro.removed': scheduleMacros(); break;
    case 'log': appendLog(message.params); break;
    case 'run.recorded': runRecorded(message.params); break;
    default: break;
  }
}

/** @type {Promise<void> | null} the config, the rings and the editor, once (or again after a failure) */
let setUp = null;

/** Loads what does not change while the page is open; a connection that opens meanwhile waits for it. */
function setUpOnce() {
  setUp = setUp || (async () => {
    const response = await fetch('/config.json', authorized());
    const config = /** @type {DashboardConfig} */ (await response.json());
    app.config = config;
    app.channels = config.channels;
    drawRings();
    app.editor = await window.MacroEditor.create($('editor'), config.codemirror, save);
    app.editor.onBreakpointsChange(breakpointsChanged);
  })().catch((error) => { setUp = null; throw error; });
  return setUp;
}

async function start() {
  // Not `if (!app.config)`: two connections opening before the config came would make two editors.
  await setUpOnce();
  await rpc('subscribe', { events: ['progress', 'macros', 'log', 'runs'] });
  updateValues(await rpc('progress.get'));
  $('log').textContent = '';
  for (const record of await rpc('log.recent', { limit: 100 })) appendLog(record);
  await loadMacros();
  await refreshStatus();
  await showRuns();
}

// ---- Rings ----

function drawRings() {
  const svg = $('rings');
  svg.textContent = '';
  const count = app.channels.length;
  const inner = 28, outer = 94;
  const band = (outer - inner) / count;
  const width = Math.max(4, Math.min(16, band - 3));
  const group = document.createElementNS(SVG, 'g');
  group.setAttribute('transform', 'rotate(-90 100 100)');
  app.channels.forEach((channel, index) => {
    const radius = inner + band * (index + 0.5);
    const circumference = 2 * Math.PI * radius;
    const ring = document.createElementNS(SVG, 'g');
    ring.setAttribute('role', 'progressbar');
    ring.setAttribute('aria-label', channel.name);
    ring.setAttribute('aria-valuemin', String(channel.min));
    ring.setAttribute('aria-valuemax', String(channel.max));
    ring.setAttribute('aria-valuenow', String(channel.min));
    ring.dataset.channel = channel.name;
    const track = document.createElementNS(SVG, 'circle');
    const arc = document.createElementNS(SVG, 'circle');
    for (const circle of [track, arc]) {
      circle.setAttribute('cx', '100');
      circle.setAttribute('cy', '100');
      circle.setAttribute('r', radius.toFixed(2));
      circle.setAttribute('stroke-width', width.toFixed(2));
    }
    track.setAttribute('class', 'ring-track');
    arc.setAttribute('class', `ring-arc ring-${index % 6}`);
    arc.setAttribute('stroke-dasharray', circumference.toFixed(2));
    arc.setAttribute('stroke-dashoffset', circumference.toFixed(2));
    arc.dataset.circumference = String(circumference);
    ring.append(track, arc);
    group.appendChild(ring);
  });
  svg.appendChild(group);
  const legend = $('legend');
  legend.textContent = '';
  app.channels.slice().reverse().forEach((channel) => {
    const index = app.channels.indexOf(channel);
    legend.appendChild(element('li', { class: `ring-${index % 6}` },
      element('span', { class: 'swatch', 'aria-hidden': 'true' }),
      element('span', { class: 'name' }, channel.name),
      element('span', { class: 'value', id: `value-${channel.name}` }, '–')));
  });
}

/** @param {Record<string, unknown>} values a channel's value by its name */
function updateValues(values) {
  app.channels.forEach((channel) => {
    const value = values[channel.name];
    if (typeof value !== 'number') return;
    app.values[channel.name] = value;
    const ring = document.querySelector(`#rings [data-channel="${channel.name}"]`);
    if (!ring) return;
    const arc = /** @type {SVGElement} */ (ring.querySelector('.ring-arc'));
    const fraction = Math.max(0, Math.min(1, (value - channel.min) / (channel.max - channel.min)));
    const circumference = Number(arc.dataset.circumference);
    arc.setAttribute('stroke-dashoffset', (circumference * (1 - fraction)).toFixed(2));
    ring.setAttribute('aria-valuenow', String(value));
    ring.setAttribute('aria-valuetext', `${channel.name} ${format(value)} of ${format(channel.max)}`);
    $(`value-${channel.name}`).textContent = format(value);
  });
}

// ---- Macros ----

/** @type {ReturnType<typeof setTimeout> | undefined} */
let macrosTimer;
function scheduleMacros() {
  clearTimeout(macrosTimer);
  macrosTimer = setTimeout(() => loadMacros().catch(() => {}), 50);
}

/**
 * The parameter names of the function a macro's source declares.
 * @param {string | undefined} source
 * @returns {string[]}
 */
function parameters(source) {
  const match = /^\s*(?:(?:\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)\s*)*(?:async\s+)?function\s*\*?\s*[\w$]*\s*\(([^)]*)\)/.exec(source || '');
  if (!match) return [];
  return match[1].split(',').map((name) => name.trim().replace(/=.*$/, '').trim()).filter((name) => /^[\w$]+$/.test(name));
}

async function loadMacros() {
  const list = await rpc('macro.list');
  // Lib files (macros/lib/*.js) are shared code, not macros: nothing to run, and the protocol
  // has no method to read or save them. They are listed apart, with their status.
  app.macros = list.filter((entry) => (entry.kind || 'macro') === 'macro');
  app.libs = list.filter((entry) => entry.kind === 'lib');
  // Data files macros read with resource(NAME): listed, not run.
  app.resources = list.filter((entry) => entry.kind === 'resource');
  // What each macro's triggers are doing (macros without triggers are not listed).
  try {
    app.triggers = new Map((await rpc('macro.triggers')).map((entry) => [entry.name, entry]));
  } catch (error) { app.triggers = new Map(); }
  await Promise.all(app.macros.map(async (entry) => {
    const known = app.sources.get(entry.name);
    if (known && known.version === entry.version) return;
    try {
      const { source } = await rpc('macro.source', { name: entry.name });
      app.sources.set(entry.name, { version: entry.version, source });
    } catch (error) { app.sources.set(entry.name, { version: entry.version, source: '' }); }
  }));
  renderMacros();
  renderPicker();
  renderProfilePicker();
}

function renderMacros() {
  const container = $('macros');
  const focused = document.activeElement && document.activeElement.id;
  const typed = new Map(Array.from(container.querySelectorAll('input')).map((input) => [input.id, input.value]));
  container.textContent = '';
  for (const entry of app.macros) {
    const params = parameters((app.sources.get(entry.name) || {}).source);
    const inputs = params.map((param) => element('label', {},
      param, element('input', { id: `arg-${entry.name}-${param}`, 'data-param': param, autocomplete: 'off', spellcheck: 'false', placeholder: 'JSON or text' })));
    const outcome = element('output', { class: 'outcome', id: `outcome-${entry.name}`, 'aria-live': 'polite' });
    const previous = app.outcomes.get(entry.name);
    if (previous) { outcome.className = `outcome ${previous.kind}`; outcome.textContent = previous.text; }
    const item = element('li', { class: `macro${entry.status === 'error' ? ' broken' : ''}`, 'data-macro': entry.name },
      element('div', { class: 'macro-head' },
        element('span', { class: 'macro-name' }, entry.name),
        entry.quarantined ? element('span', { class: 'badge error quarantined', title: entry.error ? entry.error.message : '' }, 'quarantined')
          : entry.status === 'error' ? element('span', { class: 'badge error' }, 'broken') : null,
        element('span', { class: 'macro-actions' },
          entry.quarantined ? element('button', { type: 'button', id: `unquarantine-${entry.name}`, onclick: () => liftQuarantine(entry.name) }, `Lift quarantine of ${entry.name}`) : null,
          element('button', { type: 'button', class: 'primary', id: `run-${entry.name}`, onclick: () => runMacro(entry.name) }, `Run ${entry.name}`),
          element('button', { type: 'button', id: `debug-macro-${entry.name}`, onclick: () => debugMacro(entry.name, macroArguments(entry.name)) }, `Debug ${entry.name}`),
          element('button', { type: 'button', id: `edit-${entry.name}`, 'aria-label': `Edit ${entry.name}`, onclick: () => openMacro(entry.name, true) }, 'Edit'))),
      inputs.length ? element('div', { class: 'params' }, inputs) : null,
      entry.error ? element('p', { class: 'macro-error' },
        `${entry.error.file || entry.file}:${entry.error.line ?? '?'}:${entry.error.column ?? '?'}: ${entry.error.message}` +
        ' (the previous version, if any, still runs)') : null,
      links(entry),
      triggerLine(app.triggers && app.triggers.get(entry.name)),
      outcome);
    container.appendChild(item);
  }
  for (const entry of app.libs || []) {
    container.appendChild(element('li', { class: `macro lib${entry.status === 'error' ? ' broken' : ''}`, 'data-lib': entry.name },
      element('div', { class: 'macro-head' },
        element('span', { class: 'macro-name' }, entry.name),
        element('span', { class: 'badge' }, 'shared code'),
        entry.status === 'error' ? element('span', { class: 'badge error' }, 'broken') : null),
      element('p', { class: 'muted lib-note' }, entry.module
        ? `${entry.file}: a module; macros and modules import from it. Edit the file itself.`
        : `${entry.file}: functions every macro can use; not a macro to run. Edit the file itself.`),
      entry.error ? element('p', { class: 'macro-error' },
        `${entry.error.file || entry.file}:${entry.error.line ?? '?'}:${entry.error.column ?? '?'}: ${entry.error.message}` +
        ' (what its previous version defined stays)') : null,
      links(entry)));
  }
  for (const entry of app.resources || []) {
    container.appendChild(element('li', { class: 'macro lib resource', 'data-resource': entry.name },
      element('div', { class: 'macro-head' },
        element('span', { class: 'macro-name' }, entry.name),
        element('span', { class: 'badge' }, 'resource')),
      element('p', { class: 'muted lib-note' }, `${entry.file} (${entry.size ?? 0} bytes): data macros read with resource("${entry.name.replace(/^resources\//, '')}"); each read sees the file as it is now.`)));
  }
  for (const [id, value] of typed) { const input = $input(id); if (input) input.value = value; }
  if (focused && $(focused)) $(focused).focus();
}

/**
 * `imports lib/rings · imported by bump, fill` of an entry that has either, else null.
 * @param {MacroEntry} entry
 */
function links(entry) {
  const parts = [];
  if (entry.imports && entry.imports.length) parts.push(`imports ${entry.imports.join(', ')}`);
  if (entry.importers && entry.importers.length) parts.push(`imported by ${entry.importers.join(', ')}`);
  return parts.length ? element('p', { class: 'muted links', 'data-links': entry.name }, parts.join(' · ')) : null;
}

/**
 * `every "5s", next 10:05:00 · fired 3, dropped 1 · last run ok` of a macro's triggers, else null.
 * @param {TriggerStatus | undefined} status
 */
function triggerLine(status) {
  if (!status) return null;
  const specs = status.triggers.map((trigger) => {
    const next = trigger.next ? `, next ${new Date(trigger.next).toLocaleTimeString()}` : '';
    return `${JSON.stringify(trigger.spec)}${next}`;
  });
  const last = status.lastRun ? ` · last run ${status.lastRun.ok ? 'ok' : 'failed'}: ${status.lastRun.result}` : '';
  const paused = status.paused ? ` · paused: ${status.paused}` : '';
  return element('p', { class: 'muted triggers', 'data-triggers': status.name },
    `triggers (${status.mode.mode}): ${specs.join('; ')} · fired ${status.fired}, dropped ${status.dropped}, failed ${status.failed}${last}${paused}`);
}

/** @param {string} text JSON, or else a string */
function argumentValue(text) {
  try { return JSON.parse(text); } catch (error) { return text; }
}

/**
 * The arguments typed for macro `name` (up to the last one filled in).
 * @param {string} name
 */
function macroArguments(name) {
  const inputs = Array.from(document.querySelectorAll(`[data-macro="${name}"] input[data-param]`), (input) => /** @type {HTMLInputElement} */ (input));
  let last = -1;
  inputs.forEach((input, index) => { if (input.value.trim() !== '') last = index; });
  return inputs.slice(0, last + 1).map((input) => argumentValue(input.value.trim()));
}

/** @param {string} name */
async function runMacro(name) {
  const args = macroArguments(name);
  setOutcome(name, 'running', 'running…');
  try {
    const result = await rpc('macro.call', { name, args });
    setOutcome(name, 'ok', `→ ${JSON.stringify(result === undefined ? null : result)}`);
  } catch (error) {
    setOutcome(name, 'error', describeError(error));
  }
  refreshStatus().catch(() => {});
}

/** @param {string} name */
async function liftQuarantine(name) {
  try {
    await rpc('macro.unquarantine', { name });
    setOutcome(name, 'ok', 'quarantine lifted');
  } catch (error) {
    setOutcome(name, 'error', describeError(error));
  }
  await loadMacros();
}

/**
 * What a failed call says, with its file, line and stack when the error has them.
 * @param {unknown} reason a rejected `rpc`'s JSON-RPC error, or a thrown Error
 */
function describeError(reason) {
  const error = /** @type {RPCError} */ (reason);
  const data = error.data || {};
  if (data.file && data.line) {
    const message = data.errorName ? `${data.errorName}: ${data.message}` : (data.message || error.message);
    let text = `${data.file}:${data.line}:${data.column ?? 0}: error: ${message}`;
    // JSC's `name@file:line:col` frames, shown like the CLI (Node style).
    for (const frame of (data.stack || '').split('\n').filter(Boolean)) {
      const at = frame.indexOf('@');
      text += '\n    at ' + (at < 0 ? `<anonymous> (${frame})` : `${at === 0 ? '<anonymous>' : frame.slice(0, at)} (${frame.slice(at + 1)})`);
    }
    return text;
  }
  if (data.reason && !String(error.message).includes(data.reason)) return `${error.message} (${data.reason})`;
  return error.message || String(error);
}

/**
 * @param {string} name the macro
 * @param {string} kind `running`, `ok` or `error` (a CSS class)
 * @param {string} text
 */
function setOutcome(name, kind, text) {
  app.outcomes.set(name, { kind, text });
  const outcome = $(`outcome-${name}`);
  if (outcome) { outcome.className = `outcome ${kind}`; outcome.textContent = text; }
}

// ---- Editor ----

/** The editor: start() creates it before anything that uses it can run. */
function editor() {
  if (!app.editor) throw new Error('the editor is not ready');
  return app.editor;
}

function renderPicker() {
  const select = $select('editor-macro');
  const chosen = app.current;
  select.textContent = '';
  for (const entry of app.macros) {
    select.appendChild(element('option', { value: entry.name, selected: entry.name === chosen }, entry.status === 'error' ? `${entry.name} (broken)` : entry.name));
  }
  if (!chosen && app.macros.length) openMacro(app.macros[0].name, false);
  else if (chosen && !app.macros.some((entry) => entry.name === chosen) && !app.draft) {
    app.current = null;
    if (app.macros.length) openMacro(app.macros[0].name, false);
  }
  updateEditorButtons();
}

function updateEditorButtons() {
  const has = Boolean(app.current);
  $button('editor-save').disabled = !has;
  $button('editor-rename').disabled = !has || Boolean(app.draft);
  $button('editor-delete').disabled = !has || Boolean(app.draft);
}

/**
 * Shows macro `name` in the editor.
 * @param {string} name
 * @param {boolean} focus
 */
async function openMacro(name, focus) {
  // Only the newest open applies: an older one answering late (the first macro opened on load,
  // then "Edit NAME" clicked) must not replace the text the user has started to edit.
  const ticket = (app.opening ?? 0) + 1;
  app.opening = ticket;
  let source;
  try {
    ({ source } = await rpc('macro.source', { name }));
    if (ticket !== app.opening) return;
  } catch (error) {
    if (ticket !== app.opening) return;
    // The picker goes on naming the text the editor shows.
    $select('editor-macro').value = app.current || '';
    showDiagnostic('error', `Cannot open ${name}: ${describeError(error)}`);
    return;
  }
  app.current = name;
  app.draft = false;
  $select('editor-macro').value = name;
  editor().setValue(source);
  editor().clearError();
  editor().setBreakpoints(debugState.breakpoints.get(name) || []);
  if (debugState.stopped && debugState.frame && name === debugState.macro && debugState.frame.file === debugState.file) {
    editor().showCurrentLine(debugState.frame.line);
  }
  const entry = app.macros.find((item) => item.name === name);
  if (entry && entry.error) {
    showDiagnostic('error', `${entry.file}:${entry.error.line}:${entry.error.column}: ${entry.error.message} (on disk; the previous version still runs)`);
    if (entry.error.line) editor().markError(entry.error.line, entry.error.message);
  } else {
    showDiagnostic('', '');
  }
  updateEditorButtons();
  showHistory(name);
  showStore(name);
  if (focus) editor().focus();
}

/**
 * @param {string} kind `ok`, `error` or '' (a CSS class)
 * @param {string} text
 * @param {number} [line]
 */
function showDiagnostic(kind, text, line) {
  const node = $('editor-diagnostic');
  node.className = `diagnostic ${kind}`;
  node.textContent = text;
  if (line) node.dataset.line = String(line); else delete node.dataset.line;
}

async function save() {
  if (!app.current) return;
  const name = app.current;
  try {
    const result = await rpc('macro.save', { name, source: editor().getValue() });
    // Unless another macro (or a new draft) was opened while it saved.
    if (app.current === name) { editor().clearError(); app.draft = false; }
    showDiagnostic('ok', `Saved ${result.file}: version ${result.version}, live.`);
    await loadMacros();
  } catch (reason) {
    const error = /** @type {RPCError} */ (reason);
    const data = error.data || {};
    if (data.line) {
      editor().markError(data.line, data.message || error.message);
      showDiagnostic('error', `${data.file || name}:${data.line}:${data.column ?? 0}: ${data.message || error.message}\nNot saved: the previous version keeps running.`, data.line);
    } else {
      showDiagnostic('error', `Not saved: ${error.message}`);
    }
  }
}

/** @param {string} name */
const TEMPLATE = (name) => `// ${name}(): describe what it does.\nfunction ${name}() {\n    progress.inner += 1;\n    return progress.inner;\n}\n`;

/** @param {'new' | 'rename'} mode */
function askName(mode) {
  app.nameMode = mode;
  $('editor-name-form').hidden = false;
  $('editor-name-label').textContent = mode === 'new' ? 'New macro name' : `Rename ${app.current} to`;
  $('editor-name-ok').textContent = mode === 'new' ? 'Create' : 'Rename';
  $input('editor-name').value = mode === 'new' ? '' : app.current ?? '';
  $('editor-name').focus();
}

/** @param {Event} event */
async function submitName(event) {
  event.preventDefault();
  const name = $input('editor-name').value.trim();
  if (!/^[A-Za-z_$][\w$]*$/.test(name)) { showDiagnostic('error', `'${name}' is not a valid macro name (letters, digits, _ or $; not starting with a digit)`); return; }
  if (app.macros.some((entry) => entry.name === name)) { showDiagnostic('error', `A macro named ${name} exists already.`); return; }
  $('editor-name-form').hidden = true;
  if (app.nameMode === 'new') {
    app.opening = (app.opening ?? 0) + 1; // a pending open must not replace the new draft
    app.current = name;
    app.draft = true;
    editor().setValue(TEMPLATE(name));
    editor().clearError();
    showDiagnostic('', `New macro ${name}: edit, then Save to create macros/${name}.js.`);
    updateEditorButtons();
    editor().focus();
    return;
  }
  const old = app.current;
  try {
    await rpc('macro.save', { name, source: editor().getValue() });
    await rpc('macro.delete', { name: old });
    if (app.current === old) app.current = name;
    showDiagnostic('ok', `Renamed ${old} to ${name}.`);
    await loadMacros();
    $select('editor-macro').value = name;
  } catch (error) {
    showDiagnostic('error', `Not renamed: ${describeError(error)}`);
  }
}

async function deleteCurrent() {
  const name = app.current;
  $('editor-confirm').hidden = true;
  try {
    await rpc('macro.delete', { name });
    if (app.current === name) app.current = null;
    showDiagnostic('ok', `Deleted ${name}.`);
    await loadMacros();
  } catch (error) {
    showDiagnostic('error', `Not deleted: ${describeError(error)}`);
  }
}

// ---- Running calls, status, log ----

async function refreshRunning() {
  if (!app.online) return;
  const calls = await rpc('macro.running');
  const body = $('running');
  // Rows are kept (only the elapsed time changes), so a focused Cancel button stays focused.
  const live = new Set(calls.map((call) => String(call.call)));
  for (const row of Array.from(body.children, (child) => /** @type {HTMLElement} */ (child))) if (!live.has(row.dataset.call ?? '')) row.remove();
  for (const call of calls) {
    let row = body.querySelector(`tr[data-call="${call.call}"]`);
    if (!row) {
      row = element('tr', { 'data-call': call.call },
        element('td', {}, String(call.call)),
        element('td', {}, call.name),
        element('td', { class: 'elapsed' }),
        element('td', {}, element('button', { type: 'button', class: 'danger', 'aria-label': `Cancel ${call.name} (call ${call.call})`,
          onclick: () => rpc('macro.cancel', { call: call.call }).catch((error) => appendLog({ level: 'error', message: error.message })) }, 'Cancel')));
      body.appendChild(row);
    }
    /** @type {Element} */ (row.querySelector('.elapsed')).textContent = `${(call.elapsedMs / 1000).toFixed(1)} s`;
  }
  $('running-empty').hidden = calls.length > 0;
}

async function refreshStatus() {
  if (!app.online) return;
  const status = await rpc('engine.status');
  app.status = status;
  app.statusAt = performance.now();
  $('status-calls').textContent = String(status.calls);
  $('status-errors').textContent = String(status.errors);
  $('status-connections').textContent = String(status.connections);
  if (status.javascript === 'paused') showBanner(`JavaScript is paused: ${status.paused} (macro resume, or engine.resume, runs it again)`);
  else if (app.pausedShown) $('banner').hidden = true;
  app.pausedShown = status.javascript === 'paused';
  $('version').textContent = status.version;
  $('socket').textContent = status.socket;
  showUptime();
}

function showUptime() {
  // Not while the daemon is away: its uptime is unknown, not growing.
  if (!app.status || !app.online) return;
  const seconds = Math.floor(app.status.uptime + (performance.now() - app.statusAt) / 1000);
  const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
  $('status-uptime').textContent = h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

/** @param {LogRecord} record */
function appendLog(record) {
  const log = $('log');
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 30;
  const metadata = record.metadata || {};
  const source = metadata.macro || metadata.name || '';
  // The record's own time (log.recent's history too), not the moment the page received it.
  const when = record.time ? new Date(record.time) : new Date();
  const time = (isNaN(when.getTime()) ? new Date() : when).toLocaleTimeString();
  log.appendChild(element('li', record.time ? { 'data-time': record.time } : {},
    element('span', { class: 'time' }, time),
    element('span', { class: `level level-${record.level}` }, record.level),
    element('span', { class: 'message' }, (source ? `[${source}] ` : '') + record.message)));
  while (log.children.length > 500) log.children[0].remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

/**
 * Runs `body` every `ms` while the page is online, never two at once.
 * @param {number} ms
 * @param {() => Promise<unknown>} body
 */
function every(ms, body) {
  let busy = false;
  setInterval(() => {
    if (busy || !app.online) return;
    busy = true;
    body().catch(() => {}).finally(() => { busy = false; });
  }, ms);
}

document.addEventListener('DOMContentLoaded', () => {
  $('editor-macro').addEventListener('change', () => openMacro($select('editor-macro').value, false));
  $('editor-save').addEventListener('click', () => save());
  $('editor-new').addEventListener('click', () => askName('new'));
  $('editor-rename').addEventListener('click', () => askName('rename'));
  $('editor-delete').addEventListener('click', () => {
    $('editor-confirm-text').textContent = `Delete macros/${app.current}.js?`;
    $('editor-confirm-ok').textContent = `Delete ${app.current}`;
    $('editor-confirm').hidden = false;
    $('editor-confirm-cancel').focus();
  });
  $('editor-confirm-ok').addEventListener('click', () => deleteCurrent());
  $('editor-confirm-cancel').addEventListener('click', () => { $('editor-confirm').hidden = true; });
  $('editor-name-form').addEventListener('submit', submitName);
  $('editor-name-cancel').addEventListener('click', () => { $('editor-name-form').hidden = true; });
  every(500, refreshRunning);
  every(2000, refreshStatus);
  setInterval(showUptime, 1000);
  takeToken().then(connect, (error) => {
    $('link-state').textContent = 'offline';
    showBanner(`Cannot open the dashboard: ${error.message}`);
  });
});
