'use strict';
// From app.js, loaded before this file (classic scripts share one global scope); app.js calls
// showStore when the editor opens a macro, and runRecorded on each `run.recorded`.
/* global $, rpc, element, describeError, debugMacro */
/* exported showStore, showRuns, runRecorded */

// ---- The store of the macro in the editor: its keys, edited in place ----

/** @type {{ name: string | null, ticket: number }} the macro shown, and the newest request for it */
const storeState = { name: null, ticket: 0 };

/**
 * Lists the store of `name` (the macro in the editor): each key with its value as JSON, an
 * editable field, Save and Delete; and a row to add a key.
 * @param {string | null} name
 */
async function showStore(name) {
  const ticket = ++storeState.ticket;
  storeState.name = name;
  $('store-name').textContent = name ? `of ${name}` : '';
  /** @type {StoreContents | null} */
  let result = null;
  if (name) {
    try { result = await rpc('store.get', { name }); } catch { result = null; }
  }
  if (ticket !== storeState.ticket) return;
  const body = $('store');
  body.textContent = '';
  const entries = result ? Object.entries(result.entries) : [];
  for (const [key, value] of entries) {
    const input = element('input', { value: JSON.stringify(value), 'aria-label': `Value of ${key}`, spellcheck: 'false' });
    body.appendChild(element('tr', { 'data-key': key },
      element('th', { scope: 'row' }, key),
      element('td', {}, input),
      element('td', {},
        element('button', { type: 'button', 'aria-label': `Save ${key}`, onclick: () => saveKey(key, /** @type {HTMLInputElement} */ (input).value) }, 'Save'),
        ' ',
        element('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${key}`, onclick: () => deleteKey(key) }, 'Delete'))));
  }
  $('store-empty').hidden = entries.length > 0;
  $('store-empty').textContent = name ? `The store of ${name} is empty.` : 'Open a macro in the editor to see its store.';
  $('store-size').textContent = result ? `${result.bytes} of ${result.limit} bytes` : '';
  /** @type {HTMLFormElement} */ ($('store-form')).hidden = !name;
}

/**
 * Sets `key` of the shown store to `text` (JSON when it parses, else a string).
 * @param {string} key
 * @param {string} text
 */
async function saveKey(key, text) {
  const name = storeState.name;
  if (!name) return;
  /** @type {unknown} */
  let value = text;
  try { value = JSON.parse(text); } catch { value = text; }
  try {
    await rpc('store.set', { name, key, value });
    $('store-message').textContent = `Saved ${key}.`;
  } catch (error) {
    $('store-message').textContent = `Not saved: ${describeError(error)}`;
  }
  await showStore(name);
}

/** @param {string} key */
async function deleteKey(key) {
  const name = storeState.name;
  if (!name) return;
  try {
    await rpc('store.delete', { name, key });
    $('store-message').textContent = `Deleted ${key}.`;
  } catch (error) {
    $('store-message').textContent = `Not deleted: ${describeError(error)}`;
  }
  await showStore(name);
}

// ---- The run records: the newest runs, one in detail, and a replay in the debugger ----

/** @type {{ ticket: number, shown: number | null }} */
const runsState = { ticket: 0, shown: null };

/** Lists the newest runs, newest first. */
async function showRuns() {
  const ticket = ++runsState.ticket;
  /** @type {RunSummary[]} */
  let runs = [];
  try { runs = await rpc('run.list', { limit: 50 }); } catch { runs = []; }
  if (ticket !== runsState.ticket) return;
  const body = $('runs');
  body.textContent = '';
  for (const run of [...runs].reverse()) {
    const outcome = run.ok === true ? 'ok' : run.ok === false ? `failed: ${run.error || ''}` : 'running';
    body.appendChild(element('tr', { 'data-run': run.id, class: run.ok === false ? 'failed' : null },
      element('th', { scope: 'row' }, String(run.id)),
      element('td', {}, new Date(run.started).toLocaleTimeString()),
      element('td', {}, run.macro),
      element('td', {}, run.origin),
      element('td', {}, run.ms === null ? '' : `${run.ms.toFixed(1)} ms`),
      element('td', {}, outcome),
      element('td', {},
        element('button', { type: 'button', 'aria-label': `Show run ${run.id}`, onclick: () => showRun(run.id) }, 'Show'),
        ' ',
        element('button', { type: 'button', 'aria-label': `Debug run ${run.id}`, onclick: () => debugMacro(run.macro, run.id) }, 'Debug this run'))));
  }
  $('runs-empty').hidden = runs.length > 0;
}

/**
 * Shows everything run `id` did.
 * @param {number} id
 */
async function showRun(id) {
  runsState.shown = id;
  try {
    /** @type {RunRecord} */
    const run = await rpc('run.get', { id });
    const lines = [`run ${run.id}: ${run.macro} (${run.origin}), ${run.started}`, `arguments: ${JSON.stringify(run.arguments)}`];
    if (run.error) lines.push(`error: ${run.error.location ? `${run.error.location}: ` : ''}${run.error.name ? `${run.error.name}: ` : ''}${run.error.message}`);
    else lines.push(`result: ${JSON.stringify(run.result)}`);
    for (const line of run.console) lines.push(`console.${line.level}: ${line.message}`);
    for (const change of run.changes) lines.push(`${change.channel}: ${change.from} -> ${change.to}${change.kept ? '' : ' (rolled back)'}`);
    for (const edit of run.storeChanges) {
      lines.push(`store ${edit.key}: ${edit.from === undefined ? '(unset)' : JSON.stringify(edit.from)} -> ${edit.to === undefined ? '(deleted)' : JSON.stringify(edit.to)}${edit.kept ? '' : ' (rolled back)'}`);
    }
    lines.push(`time: ${run.timings.totalMs} ms, ${run.timings.javascriptMs} ms in JavaScript over ${run.timings.turns.length} turn(s)`);
    $('run-detail').textContent = lines.join('\n');
  } catch (error) {
    $('run-detail').textContent = `Run ${id}: ${describeError(error)}`;
  }
}

/**
 * A run ended (`run.recorded`): the list, and the store of the macro in the editor if it ran.
 * @param {RunSummary} run
 */
function runRecorded(run) {
  showRuns();
  if (run && run.macro === storeState.name) showStore(storeState.name);
}

$('store-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = /** @type {HTMLInputElement} */ ($('store-key')).value;
  const value = /** @type {HTMLInputElement} */ ($('store-value')).value;
  if (key) saveKey(key, value);
});
