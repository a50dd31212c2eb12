'use strict';
// From app.js, loaded before this file (classic scripts share one global scope); app.js calls
// showHistory when the editor opens a macro and when a new version of it goes live.
/* global $, app, rpc, element, every, appendLog, openMacro, loadMacros, describeError */
/* exported showHistory */

// ---- Version history of the macro in the editor: a diff and a restore button per version ----

/** @type {{ name: string | null, ticket: number }} the macro shown, and the newest request for it */
const historyState = { name: null, ticket: 0 };

/**
 * Lists the kept versions of `name` (the macro in the editor), newest first.
 * @param {string | null} name
 */
async function showHistory(name) {
  const ticket = ++historyState.ticket;
  if (name !== historyState.name) { $('history-diff').textContent = ''; $('history-message').textContent = ''; }
  historyState.name = name;
  $('history-name').textContent = name ? `of ${name}` : '';
  /** @type {MacroHistory | null} */
  let result = null;
  if (name) {
    try { result = await rpc('macro.history', { name }); } catch { result = null; }
  }
  if (ticket !== historyState.ticket) return;
  const body = $('history');
  body.textContent = '';
  const versions = result ? [...result.versions].reverse() : [];
  for (const version of versions) {
    const current = result !== null && version.version === result.current;
    body.appendChild(element('tr', { 'data-version': version.version, class: current ? 'current' : null },
      element('th', { scope: 'row' }, `${version.version}${current ? ' (now)' : ''}`),
      element('td', {}, new Date(version.time).toLocaleString()),
      element('td', {}, version.who),
      element('td', { class: 'hash' }, version.hash.slice(0, 12)),
      element('td', {},
        element('button', { type: 'button', 'aria-label': `Diff version ${version.version}`, onclick: () => diffVersion(version.version) }, 'Diff'),
        ' ',
        element('button', { type: 'button', 'aria-label': `Restore version ${version.version}`, disabled: current,
          onclick: () => restoreVersion(version.version) }, 'Restore'))));
  }
  $('history-empty').hidden = versions.length > 0;
}

/**
 * Shows what changed from `version` to the file as it is now.
 * @param {number} version
 */
async function diffVersion(version) {
  const name = historyState.name;
  if (!name) return;
  try {
    const result = await rpc('macro.diff', { name, from: version });
    if (name !== historyState.name) return;
    $('history-diff').textContent = result.diff || `Version ${version} is what the file holds now.`;
  } catch (error) {
    $('history-diff').textContent = `No diff: ${describeError(error)}`;
  }
}

/**
 * Writes `version` back to the file and loads it; a version that no longer loads is refused
 * with its error, and the current version keeps running.
 * @param {number} version
 */
async function restoreVersion(version) {
  const name = historyState.name;
  if (!name) return;
  const message = $('history-message');
  try {
    const result = await rpc('macro.rollback', { name, version });
    message.className = 'diagnostic ok';
    message.textContent = `Restored version ${version} of ${name}: live as version ${result.version}.`;
    $('history-diff').textContent = '';
    await loadMacros();
    if (app.current === name) await openMacro(name, false);
  } catch (error) {
    message.className = 'diagnostic error';
    message.textContent = `Not restored: ${describeError(error)}\nThe current version keeps running.`;
  }
}

// ---- Audit log: who changed what ----

/** @param {AuditEvent} event */
function auditWho(event) {
  const who = event.who;
  return [who.surface, who.uid !== undefined ? `uid ${who.uid}` : '', who.pid !== undefined ? `pid ${who.pid}` : '',
    who.session !== undefined ? `session ${who.session}` : ''].filter(Boolean).join(' ');
}

/** @param {AuditEvent} event */
function auditWhat(event) {
  const short = (/** @type {string | undefined} */ hash) => hash ? hash.slice(0, 12) : '–';
  const parts = [];
  if (event.before || event.after) parts.push(`${short(event.before)} → ${short(event.after)}`);
  if (event.version) parts.push(`v${event.version}`);
  if (event.details) parts.push(JSON.stringify(event.details));
  return parts.join(' ');
}

async function refreshAudit() {
  /** @type {AuditEvent[]} */
  const events = await rpc('audit.recent', { limit: 50 });
  const body = $('audit');
  body.textContent = '';
  for (const event of events.reverse()) {
    body.appendChild(element('tr', { 'data-seq': event.seq, 'data-kind': event.kind },
      element('td', {}, new Date(event.time).toLocaleTimeString()),
      element('td', {}, event.kind),
      element('td', {}, auditWho(event)),
      element('td', {}, event.name ?? ''),
      element('td', { class: 'hash' }, auditWhat(event))));
  }
  $('audit-empty').hidden = events.length > 0;
}

document.addEventListener('DOMContentLoaded', () => {
  every(2000, () => refreshAudit().catch((error) => { appendLog({ level: 'error', message: `audit: ${describeError(error)}` }); }));
});
