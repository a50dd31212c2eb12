'use strict';
// From app.js, loaded before this file (classic scripts share one global scope); app.js calls
// renderProfilePicker.
/* global $, $input, $select, $button, SVG, app, rpc, element, every, appendLog */
/* exported renderProfilePicker */

// ---- Statistics ----

/** @type {[string, (s: MacroStats) => unknown][]} a column's data-stat key, and its value */
const STAT_COLUMNS = [
  ['calls', (s) => s.calls], ['ok', (s) => s.ok],
  ['threw', (s) => s.errors.threw], ['timeout', (s) => s.errors.timeout],
  ['cancelled', (s) => s.errors.cancelled], ['memory', (s) => s.errors.memory],
  ['p50', (s) => ms(s.p50Ms)], ['p95', (s) => ms(s.p95Ms)], ['p99', (s) => ms(s.p99Ms)], ['max', (s) => ms(s.maxMs)],
  ['js', (s) => ms(s.jsMs)], ['reloads', (s) => s.reloads], ['failed', (s) => s.failedReloads],
];

/** @param {number | null | undefined} value */
function ms(value) { return value === null || value === undefined ? '–' : `${value} ms`; }

async function refreshStats() {
  const stats = await rpc('macro.stats');
  const body = $('stats');
  const live = new Set(stats.map((s) => s.name));
  for (const row of Array.from(body.children, (child) => /** @type {HTMLElement} */ (child))) if (!live.has(row.dataset.macro ?? '')) row.remove();
  for (const s of stats) {
    let row = body.querySelector(`tr[data-macro="${CSS.escape(s.name)}"]`);
    if (!row) {
      row = element('tr', { 'data-macro': s.name },
        element('th', { scope: 'row' }, s.name),
        STAT_COLUMNS.map(([key]) => element('td', { 'data-stat': key })),
        element('td', { 'data-stat': 'lastError', class: 'last-error' }),
        element('td', {}, element('button', { type: 'button', 'aria-label': `Reset ${s.name}`,
          onclick: () => resetStats(s.name) }, 'Reset')));
      body.appendChild(row);
    }
    for (const [key, value] of STAT_COLUMNS) /** @type {Element} */ (row.querySelector(`[data-stat="${key}"]`)).textContent = String(value(s));
    const last = s.lastError;
    /** @type {Element} */ (row.querySelector('[data-stat="lastError"]')).textContent = last ? `${last.kind}: ${last.message} (${new Date(last.time).toLocaleTimeString()})` : '';
  }
  $('stats-empty').hidden = stats.length > 0;
}

/** @param {string | null} name a macro, or null for all */
async function resetStats(name) {
  try {
    await rpc('macro.stats', name ? { name, reset: true } : { reset: true });
    await refreshStats();
  } catch (error) {
    appendLog({ level: 'error', message: `reset statistics: ${/** @type {RPCError} */ (error).message}` });
  }
}

// ---- Profile: a flame graph from the folded stacks ----

/** @typedef {{ name: string, value: number, children: Map<string, FlameNode> }} FlameNode */

/**
 * The call tree of folded stacks (`frame;frame;frame count` lines), with sample counts.
 * @param {string} text
 * @returns {FlameNode}
 */
function foldedTree(text) {
  /** @type {FlameNode} */
  const root = { name: 'all', value: 0, children: new Map() };
  for (const line of text.split('\n')) {
    const cut = line.lastIndexOf(' ');
    if (cut <= 0) continue;
    const count = Number(line.slice(cut + 1));
    if (!Number.isFinite(count) || count <= 0) continue;
    root.value += count;
    let node = root;
    for (const frame of line.slice(0, cut).split(';')) {
      let child = node.children.get(frame);
      if (!child) { child = { name: frame, value: 0, children: new Map() }; node.children.set(frame, child); }
      child.value += count;
      node = child;
    }
  }
  return root;
}

/** @param {string} text folded stacks */
function drawFlame(text) {
  const svg = $('flame');
  svg.textContent = '';
  const root = foldedTree(text);
  if (root.value === 0) { svg.setAttribute('hidden', ''); return root; }
  const width = 1000, rowHeight = 18;
  let depth = 0;
  /** @type {{ node: FlameNode, x: number, level: number }[]} */
  const rows = [];
  (function place(/** @type {FlameNode} */ node, /** @type {number} */ x, /** @type {number} */ level) {
    depth = Math.max(depth, level);
    rows.push({ node, x, level });
    let offset = x;
    for (const child of [...node.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      place(child, offset, level + 1);
      offset += child.value;
    }
  })(root, 0, 0);
  const height = (depth + 1) * rowHeight;
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.removeAttribute('hidden');
  for (const { node, x, level } of rows) {
    const w = (node.value / root.value) * width;
    const y = height - (level + 1) * rowHeight;
    const share = ((node.value / root.value) * 100).toFixed(1);
    const group = document.createElementNS(SVG, 'g');
    group.setAttribute('class', 'frame');
    group.dataset.name = node.name;
    group.dataset.samples = String(node.value);
    group.dataset.depth = String(level);
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `${node.name}: ${node.value} sample${node.value === 1 ? '' : 's'} (${share}%)`;
    const rect = document.createElementNS(SVG, 'rect');
    rect.setAttribute('x', String(x / root.value * width));
    rect.setAttribute('y', String(y));
    rect.setAttribute('width', String(Math.max(w - 0.5, 0.5)));
    rect.setAttribute('height', String(rowHeight - 1));
    rect.setAttribute('fill', level === 0 ? '#9ca3af' : `hsl(${20 + (node.name.length * 37) % 40}, 85%, ${55 + level % 3 * 5}%)`);
    group.append(title, rect);
    if (w > 40) {
      const label = document.createElementNS(SVG, 'text');
      label.setAttribute('x', String(x / root.value * width + 3));
      label.setAttribute('y', String(y + rowHeight - 5));
      label.textContent = node.name.length * 6.5 > w - 6 ? node.name.slice(0, Math.max(0, Math.floor((w - 6) / 6.5) - 1)) + '…' : node.name;
      group.append(label);
    }
    svg.append(group);
  }
  return root;
}

/** @param {Event} event */
async function runProfile(event) {
  event.preventDefault();
  const name = $select('profile-macro').value;
  const runs = Number($input('profile-runs').value) || 10;
  const message = $('profile-message');
  message.className = 'diagnostic';
  message.textContent = `Profiling ${name} (${runs} run${runs === 1 ? '' : 's'})…`;
  $button('profile-run').disabled = true;
  try {
    const result = await rpc('macro.profile', { name, runs });
    drawFlame(result.folded);
    message.textContent = `${result.samples} samples of ${result.runs} run${result.runs === 1 ? '' : 's'} of ${name}. Hover a frame for its share.`;
  } catch (error) {
    $('flame').setAttribute('hidden', '');
    message.className = 'diagnostic error';
    message.textContent = `Not profiled: ${/** @type {RPCError} */ (error).message}`;
  } finally {
    $button('profile-run').disabled = false;
  }
}

function renderProfilePicker() {
  const select = $select('profile-macro');
  const chosen = select.value;
  select.textContent = '';
  for (const entry of app.macros.filter((m) => m.kind !== 'lib' && m.status === 'ok')) select.append(element('option', { value: entry.name }, entry.name));
  if (chosen) select.value = chosen;
}

document.addEventListener('DOMContentLoaded', () => {
  $('profile-form').addEventListener('submit', runProfile);
  $('stats-reset').addEventListener('click', () => resetStats(null));
  every(1000, refreshStats);
});
