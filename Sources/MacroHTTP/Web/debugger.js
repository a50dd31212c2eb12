'use strict';
// From app.js, loaded before this file (classic scripts share one global scope); app.js calls
// debugMacro, receiveDebug and breakpointsChanged, and reads debugState.
/* global $, $input, $button, app, rpc, element, editor, openMacro, describeError, format */
/* exported debugMacro, receiveDebug, breakpointsChanged, debugState */

// ---- The debugger: a macro run step by step in a debug session of macrod's (debug.* methods) ----
// The session runs in an engine of its own on a copy of the progress values: nothing it does
// moves the rings. Breakpoints are the editor's (a click in its gutter, or F9).

/**
 * @typedef {{ id: number, name: string, file: string, line: number, column: number }} DebugFrame
 * @typedef {{ name: string, value: string, type: string, ref: number }} DebugVariable
 */

const debugState = {
  /** @type {number | null} */ session: null,
  /** @type {string | null} */ macro: null,
  /** @type {string | null} the macro's file, as the session names it */ file: null,
  stopped: false,
  /** @type {DebugFrame[]} */ frames: [],
  /** @type {DebugFrame | null} */ frame: null,
  /** @type {Map<string, number[]>} the editor's breakpoints, by macro */ breakpoints: new Map(),
};

/** @param {string} path @returns {string} the path from the macros directory on */
function shortPath(path) {
  const lib = path.lastIndexOf('/lib/');
  return lib >= 0 ? path.slice(lib + 1) : path.slice(path.lastIndexOf('/') + 1);
}

/** @param {string} text @param {string} [kind] */
function debugLog(text, kind = '') {
  const list = $('debug-console');
  list.appendChild(element('li', { class: kind }, text));
  list.scrollTop = list.scrollHeight;
}

function renderControls() {
  const live = debugState.session !== null;
  for (const id of ['debug-continue', 'debug-over', 'debug-into', 'debug-out']) $button(id).disabled = !live || !debugState.stopped;
  $button('debug-stop').disabled = !live;
  $input('debug-expression').disabled = !live || !debugState.stopped;
  $button('debug-evaluate').disabled = !live || !debugState.stopped;
  $('debug').classList.toggle('active', live);
}

/**
 * Runs macro `name` with `args` in a new debug session, stopping at the editor's breakpoints
 * (or, when it has none, before its first statement). Given a run id instead of arguments, it
 * replays that recorded run: its arguments, from the values it found, stopping at its first
 * line or at its throw.
 * @param {string} name
 * @param {unknown[] | number} args
 */
async function debugMacro(name, args) {
  if (debugState.session !== null) await stopDebugging();
  if (app.current !== name) await openMacro(name, false);
  const lines = editor().breakpoints();
  debugState.breakpoints.set(name, lines);
  $('debug-console').textContent = '';
  $('debug-stack').textContent = '';
  $('debug-variables').textContent = '';
  try {
    const started = typeof args === 'number'
      ? await rpc('debug.start', { run: args })
      : await rpc('debug.start', { name, args, stopOnEntry: lines.length === 0 });
    debugState.session = started.session;
    debugState.macro = name;
    debugState.stopped = false;
    debugState.file = started.files.find((file) => file.endsWith(`/${name}.js`)) || null;
    renderControls();
    $('debug-status').textContent = `Debugging ${name}…`;
    await sendBreakpoints();
    await rpc('debug.setExceptionBreakpoints', { session: started.session, uncaught: true });
    await rpc('debug.run', { session: started.session });
  } catch (error) {
    $('debug-status').textContent = `Cannot debug ${name}: ${describeError(error)}`;
  }
}

async function sendBreakpoints() {
  if (debugState.session === null || !debugState.file || !debugState.macro) return;
  const lines = debugState.breakpoints.get(debugState.macro) || [];
  await rpc('debug.setBreakpoints', { session: debugState.session, path: debugState.file, breakpoints: lines.map((line) => ({ line })) });
}

/**
 * The editor's breakpoints changed (for the macro it shows).
 * @param {number[]} lines
 */
function breakpointsChanged(lines) {
  if (!app.current) return;
  debugState.breakpoints.set(app.current, lines);
  if (app.current === debugState.macro) sendBreakpoints().catch(() => {});
}

async function stopDebugging() {
  if (debugState.session === null) return;
  try { await rpc('debug.terminate', { session: debugState.session }); } catch (error) { /* it has ended already */ }
}

/** @param {string} op `continue`, `next`, `stepIn` or `stepOut` */
async function resume(op) {
  if (debugState.session === null || !debugState.stopped) return;
  debugState.stopped = false;
  renderControls();
  $('debug-status').textContent = `Running ${debugState.macro}…`;
  editor().showCurrentLine(null);
  try {
    await rpc('debug.request', { session: debugState.session, op });
  } catch (error) {
    debugLog(describeError(error), 'error');
  }
}

/** @param {any} stop the `debug.stopped` notification's params */
async function stopped(stop) {
  debugState.stopped = true;
  renderControls();
  const where = `${shortPath(stop.file)}:${stop.line}:${stop.column}`;
  $('debug-status').textContent = `Paused on ${stop.reason} at ${where}` + (stop.text ? ` (${stop.text})` : '');
  const { frames } = await rpc('debug.request', { session: debugState.session, op: 'stackTrace' });
  debugState.frames = frames;
  const list = $('debug-stack');
  list.textContent = '';
  frames.forEach((/** @type {DebugFrame} */ frame, /** @type {number} */ index) => {
    list.appendChild(element('li', {}, element('button', {
      type: 'button', id: `debug-frame-${index}`, onclick: () => selectFrame(frame),
    }, `${frame.name} ${shortPath(frame.file)}:${frame.line}:${frame.column}`)));
  });
  if (frames.length) await selectFrame(frames[0]);
  revealPause();
}

/**
 * Brings the paused line and the debugger (its controls, the call stack and the variables) on
 * screen together when they fit: the editor's card goes to the top when the debugger is beside
 * it (a wide window). When the variables do not fit as well, the controls and the editor do.
 */
function revealPause() {
  const card = $('editor').closest('.card');
  if (!card) return;
  const top = Math.min(card.getBoundingClientRect().top, $('debug').getBoundingClientRect().top);
  const editorBottom = $('editor').getBoundingClientRect().bottom;
  const margin = parseFloat(getComputedStyle(card).scrollMarginTop) || 0;
  for (const last of ['debug-variables', 'debug-stack', 'debug-continue']) {
    const bottom = Math.max(editorBottom, $(last).getBoundingClientRect().bottom);
    if (top >= 0 && bottom <= window.innerHeight) return;
    if (bottom - top + margin <= window.innerHeight) {
      card.scrollIntoView({ block: 'start' });
      return;
    }
  }
}

/** @param {DebugFrame} frame */
async function selectFrame(frame) {
  debugState.frame = frame;
  debugState.frames.forEach((other, index) => {
    const item = $(`debug-frame-${index}`);
    if (item) { if (other === frame) item.setAttribute('aria-current', 'true'); else item.removeAttribute('aria-current'); }
  });
  // The editor shows the session's macro: its line is highlighted when the frame is in it.
  editor().showCurrentLine(frame.file === debugState.file && app.current === debugState.macro ? frame.line : null);
  const { scopes } = await rpc('debug.request', { session: debugState.session, op: 'scopes', args: { frameId: frame.id } });
  const container = $('debug-variables');
  container.textContent = '';
  for (const scope of scopes) {
    const details = element('details', { class: 'scope', open: scope.name !== 'Globals' }, element('summary', {}, scope.name));
    container.appendChild(details);
    const fill = () => fillVariables(details, scope.ref);
    if (scope.name === 'Globals') details.addEventListener('toggle', fill, { once: true }); else await fill();
  }
}

/**
 * Lists the variables of `ref` in `container`; an object's expand when opened.
 * @param {HTMLElement} container
 * @param {number} ref
 */
async function fillVariables(container, ref) {
  const { variables } = await rpc('debug.request', { session: debugState.session, op: 'variables', args: { ref } });
  const list = element('ul', { class: 'variables' });
  for (const variable of /** @type {DebugVariable[]} */ (variables)) {
    const text = [element('span', { class: 'variable-name' }, variable.name), ': ', element('span', { class: 'variable-value' }, variable.value)];
    if (variable.ref > 0) {
      const details = element('details', {}, element('summary', {}, ...text));
      details.addEventListener('toggle', () => fillVariables(details, variable.ref), { once: true });
      list.appendChild(element('li', {}, details));
    } else {
      list.appendChild(element('li', {}, ...text));
    }
  }
  container.appendChild(list);
}

/** @param {Event} event */
async function evaluateInFrame(event) {
  event.preventDefault();
  const input = $input('debug-expression');
  const expression = input.value.trim();
  if (!expression || debugState.session === null || !debugState.frame) return;
  debugLog(`> ${expression}`, 'input');
  try {
    const result = await rpc('debug.request', { session: debugState.session, op: 'evaluate', args: { expression, frameId: debugState.frame.id } });
    debugLog(result.value);
  } catch (error) {
    debugLog(describeError(error), 'error');
  }
  input.value = '';
}

/** @param {any} end the `debug.terminated` notification's params */
function terminated(end) {
  const name = debugState.macro || '';
  const text = end.error ? `error: ${end.error.message}` : `→ ${JSON.stringify(end.result === undefined ? null : end.result)}`;
  const changes = (end.changes || []).map((/** @type {{ channel: string, from: number, to: number }} */ change) =>
    `${change.channel} ${format(change.from)} → ${format(change.to)}`).join(', ');
  debugLog(text + (changes ? ` (would change ${changes}; the rings were not moved)` : ''), end.error ? 'error' : 'ok');
  $('debug-status').textContent = `${name} ended: ${text}`;
  debugState.session = null;
  debugState.stopped = false;
  debugState.frame = null;
  // The session's frames and values are gone with it.
  debugState.frames = [];
  $('debug-stack').textContent = '';
  $('debug-variables').textContent = '';
  editor().showCurrentLine(null);
  renderControls();
}

/**
 * A `debug.*` notification from macrod; false when `method` is not one.
 * @param {string | undefined} method
 * @param {any} params
 */
function receiveDebug(method, params) {
  if (!method || !method.startsWith('debug.')) return false;
  if (!params || params.session !== debugState.session) return true;
  if (method === 'debug.stopped') stopped(params).catch((error) => debugLog(describeError(error), 'error'));
  else if (method === 'debug.output') debugLog(String(params.text).replace(/\n$/, ''), params.category === 'stderr' ? 'error' : '');
  else if (method === 'debug.terminated') terminated(params);
  return true;
}

/** Keys: F8 continue, F10 step over, F11 step into, Shift+F11 step out, Shift+F5 stop. */
function debugKeys(/** @type {KeyboardEvent} */ event) {
  if (debugState.session === null) return;
  /** @type {Record<string, () => unknown>} */
  const actions = {
    F8: () => resume('continue'), F10: () => resume('next'), F11: () => resume('stepIn'),
    'Shift+F11': () => resume('stepOut'), 'Shift+F5': () => stopDebugging(),
  };
  const action = actions[(event.shiftKey ? 'Shift+' : '') + event.key];
  if (action) { event.preventDefault(); action(); }
}

document.addEventListener('DOMContentLoaded', () => {
  $('debug-continue').addEventListener('click', () => resume('continue'));
  $('debug-over').addEventListener('click', () => resume('next'));
  $('debug-into').addEventListener('click', () => resume('stepIn'));
  $('debug-out').addEventListener('click', () => resume('stepOut'));
  $('debug-stop').addEventListener('click', () => stopDebugging());
  $('debug-form').addEventListener('submit', evaluateInFrame);
  document.addEventListener('keydown', debugKeys);
  renderControls();
});
