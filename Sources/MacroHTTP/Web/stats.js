'use strict';

// ---- Statistics ----

const STAT_COLUMNS = [
  ['calls', (s) => s.calls], ['ok', (s) => s.ok],
  ['threw', (s) => s.errors.threw], ['timeout', (s) => s.errors.timeout],
  ['cancelled', (s) => s.errors.cancelled], ['memory', (s) => s.errors.memory],
  ['p50', (s) => ms(s.p50Ms)], ['p95', (s) => ms(s.p95Ms)], ['p99', (s) => ms(s.p99Ms)], ['max', (s) => ms(s.maxMs)],
  ['js', (s) => ms(s.jsMs)], ['reloads', (s) => s.reloads], ['failed', (s) => s.failedReloads],
];

function ms(value) { return value === null || value === undefined ? '–' : `${value} ms`; }

async function refreshStats() {
  const stats = await rpc('macro.stats');
  const body = $('stats');
  const live = new Set(stats.map((s) => s.name));
  for (const row of Array.from(body.children)) if (!live.has(row.dataset.macro)) row.remove();
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
    for (const [key, value] of STAT_COLUMNS) row.querySelector(`[data-stat="${key}"]`).textContent = String(value(s));
    const last = s.lastError;
    row.querySelector('[data-stat="lastError"]').textContent = last ? `${last.kind}: ${last.message} (${new Date(last.time).toLocaleTimeString()})` : '';
  }
  $('stats-empty').hidden = stats.length > 0;
}

async function resetStats(name) {
  try {
    await rpc('macro.stats', name ? { name, reset: true } : { reset: true });
    await refreshStats();
  } catch (error) {
    appendLog({ level: 'error', message: `reset statistics: ${error.message}` });
  }
}

// ---- Profile: a flame graph from the folded stacks ----

function foldedTree(text) {
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

function drawFlame(text) {
  const svg = $('flame');
  svg.textContent = '';
  const root = foldedTree(text);
  if (root.value === 0) { svg.setAttribute('hidden', ''); return root; }
  const width = 1000, rowHeight = 18;
  let depth = 0;
  const rows = [];
  (function place(node, x, level) {
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
    rect.setAttribute('x', x / root.value * width);
    rect.setAttribute('y', y);
    rect.setAttribute('width', Math.max(w - 0.5, 0.5));
    rect.setAttribute('height', rowHeight - 1);
    rect.setAttribute('fill', level === 0 ? '#9ca3af' : `hsl(${20 + (node.name.length * 37) % 40}, 85%, ${55 + level % 3 * 5}%)`);
    group.append(title, rect);
    if (w > 40) {
      const label = document.createElementNS(SVG, 'text');
      label.setAttribute('x', x / root.value * width + 3);
      label.setAttribute('y', y + rowHeight - 5);
      label.textContent = node.name.length * 6.5 > w - 6 ? node.name.slice(0, Math.max(0, Math.floor((w - 6) / 6.5) - 1)) + '…' : node.name;
      group.append(label);
    }
    svg.append(group);
  }
  return root;
}

async function runProfile(event) {
  event.preventDefault();
  const name = $('profile-macro').value;
  const runs = Number($('profile-runs').value) || 10;
  const message = $('profile-message');
  message.className = 'diagnostic';
  message.textContent = `Profiling ${name} (${runs} run${runs === 1 ? '' : 's'})…`;
  $('profile-run').disabled = true;
  try {
    const result = await rpc('macro.profile', { name, runs });
    drawFlame(result.folded);
    message.textContent = `${result.samples} samples of ${result.runs} run${result.runs === 1 ? '' : 's'} of ${name}. Hover a frame for its share.`;
  } catch (error) {
    $('flame').setAttribute('hidden', '');
    message.className = 'diagnostic error';
    message.textContent = `Not profiled: ${error.message}`;
  } finally {
    $('profile-run').disabled = false;
  }
}

function renderProfilePicker() {
  const select = $('profile-macro');
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
