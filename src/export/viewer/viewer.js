// The memplan plan viewer: layout, zoom, pan, tooltips, pool and graph tabs,
// tensor search, the peak and its live tensors, folding of steps that only
// produce constants, over the plan JSON embedded in the page
// (html_viewer.cpp). Embedded into the page at build time with viewer.css
// and viewer.html. Element ids are stable: tests and users' scripts rely on
// them (graph-tabs, graph-tab-<id>, pool-tabs, pool-tab-<mem_id>, panel-<i>,
// layout-<i>, live-<i>, tooltip, cf-menu, search, search-status,
// search-results, search-result-<k>, selection, peak-toggle, fold-constants,
// fold-label). window.memplanViewer is the test hook.
(function () {
'use strict';
const DATA = JSON.parse(document.getElementById('memplan-data').textContent);
const ROLE_COLOURS = { input: '#4e79a7', output: '#f28e2b', constant: '#9c755f',
  mutable: '#e15759', intermediate: '#59a14f' };
const COLOURS = DATA.roles.map(r => ROLE_COLOURS[r] || '#888');
// Three shades per role, by tensor index, so neighbours stay apart.
function shade(hex, f) {
  const n = parseInt(hex.slice(1), 16);
  const ch = k => Math.max(0, Math.min(255, Math.round(((n >> k) & 255) * f)));
  return 'rgb(' + ch(16) + ',' + ch(8) + ',' + ch(0) + ')';
}
const SHADES = COLOURS.map(c => [c, shade(c, 0.85), shade(c, 1.12)]);
const M = { left: 74, right: 10, top: 16, bottom: 22 };   // layout margins (css px)
const PEAK_COLOUR = '#b0127a';               // the peak step, its live tensors
const SELECT_COLOUR = '#ffb000';             // the selected tensor's outline
const SELECT_BAND = 'rgba(255,176,0,0.2)';   // and its lifetime
const $ = id => document.getElementById(id);

// ---- formatting ----
function fmtBytes(b) {
  if (b < 1024) return b + ' B';
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let v = b / 1024, u = 0;
  while (u + 1 < units.length && Math.round(v * 10) >= 10240) { v /= 1024; u++; }
  return v.toFixed(1) + ' ' + units[u];
}
function exactBytes(b) { return b < 1024 ? b + ' B' : fmtBytes(b) + ' (' + b + ' B)'; }
function pct(size, naive) {
  if (!naive) return '+0.0%';
  const p = (size - naive) * 100 / naive;
  const s = (p >= 0 ? '+' : '') + p.toFixed(1) + '%';
  return s === '-0.0%' ? '+0.0%' : s;
}
function niceStep(range, target) {
  if (!(range > 0)) return 1;
  const raw = range / target, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}
// Ticks in one binary unit with a 1-2-5 step in it: [{value, label}].
function byteTicks(lo, hi, target) {
  const names = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let unit = 1, u = 0;
  while ((hi - lo) / unit >= 2048 && u + 1 < names.length) { unit *= 1024; u++; }
  const step = Math.max(1, niceStep((hi - lo) / unit, target) * unit);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi && out.length < 50; v += step) {
    const x = v / unit;
    out.push({ value: v, label: v === 0 ? '0 B' : (Math.abs(x - Math.round(x)) < 1e-9 ? String(Math.round(x)) : x.toFixed(1)) + ' ' + names[u] });
  }
  return out;
}

// ---- per graph indexes, built once ----
for (const plan of DATA.plans) {
  for (const g of plan.graphs) {
    g.byPool = new Map();
    const T = g.tensors;
    for (let i = 0; i < T.pool.length; i++) {
      let list = g.byPool.get(T.pool[i]);
      if (!list) g.byPool.set(T.pool[i], list = []);
      list.push(i);
    }
    // Draw large tensors last so small ones stay visible under the cursor?
    // No: draw in first-step order; hit tests take the topmost (last) hit.
    for (const list of g.byPool.values()) list.sort((a, b) => T.first[a] - T.first[b] || a - b);
  }
}

// sel: the tensor found by search or clicked ({graph, i} in plan 0);
// peakOnly: dim every tensor not live at the peak; fold: steps that only
// produce constants take no width.
const state = { graph: 0, pool: null, view: null, full: null, hover: null, drag: null,
  sel: null, peakOnly: false, fold: true };
const panels = [];

// ---- the step axis ----
// P(g, t) is where step t starts on the x axis (t = 0..steps), in units of
// visible steps: a folded step has no width. Everything drawn maps steps
// through it, so folding is one switch. Nothing planned starts at a folded
// step, so rectangles keep their order and the live curve its shape. The
// folded steps are a sorted list (a model's Constant nodes, never more than
// its nodes), not a per-step table: a CSV buffer list's lifetimes may reach
// 10^12 steps.
function buildAxis(g) {
  const folded = [];
  if (state.fold)
    for (const t of g.constant_steps)
      if (t >= 0 && t < g.steps && (!folded.length || t > folded[folded.length - 1])) folded.push(t);
  g.folded = folded;
  g.folds = [];   // runs of folded steps: {from, to, at}
  for (let k = 0; k < folded.length; k++) {
    let e = k;
    while (e + 1 < folded.length && folded[e + 1] === folded[e] + 1) e++;
    g.folds.push({ from: folded[k], to: folded[e], at: folded[k] - k });
    k = e;
  }
}
function buildAxes() { for (const plan of DATA.plans) for (const g of plan.graphs) buildAxis(g); }
// Folded steps before step t.
function foldedBefore(g, t) {
  const f = g.folded;
  let lo = 0, hi = f.length;
  while (lo < hi) { const mid = Math.floor((lo + hi) / 2); if (f[mid] < t) lo = mid + 1; else hi = mid; }
  return lo;
}
// x of step boundary t (t = first step, or last step + 1).
function P(g, t) {
  const u = t <= 0 ? 0 : t >= g.steps ? g.steps : t;
  return g.folded.length ? u - foldedBefore(g, u) : u;
}
// The step drawn at x (the visible step whose column holds x).
function stepAt(g, x) {
  if (!g.folded.length) return Math.max(0, Math.min(g.steps - 1, Math.floor(x)));
  let lo = 0, hi = g.steps - 1;
  while (lo < hi) { const mid = Math.floor((lo + hi + 1) / 2); if (P(g, mid) <= x) lo = mid; else hi = mid - 1; }
  return lo;
}
function midStep(g, t) { return (P(g, t) + P(g, t + 1)) / 2; }
buildAxes();

function graphOf(p) { return DATA.plans[p].graphs[state.graph] || null; }
function poolOf(p) {
  const g = graphOf(p);
  return g ? g.pools.find(q => q.mem_id === state.pool) || null : null;
}
function poolIds() {
  const ids = new Set();
  for (let p = 0; p < DATA.plans.length; p++) {
    const g = graphOf(p);
    if (g) for (const q of g.pools) ids.add(q.mem_id);
  }
  return [...ids].sort((a, b) => a - b);
}
function fullView() {
  let steps = 1, top = 1;
  for (let p = 0; p < DATA.plans.length; p++) {
    const g = graphOf(p), q = poolOf(p);
    if (g) steps = Math.max(steps, P(g, g.steps));
    if (q) top = Math.max(top, q.size, q.lower_bound);
    if (g && q) {
      const T = g.tensors;
      for (const i of g.byPool.get(q.mem_id) || []) top = Math.max(top, T.offset[i] + T.size[i]);
    }
  }
  return { x0: 0, x1: steps, y0: 0, y1: top * 1.02 };
}

// ---- tabs ----
function cut(text, n) { return text.length > n ? text.slice(0, n - 1) + '\u2026' : text; }
// Graph navigation scales to models with dozens of bodies: the path from
// main to the current graph, the current graph's own bodies, and a list of
// every graph. Each graph button is #graph-tab-<id>.
function graphButton(g, selected) {
  const b = document.createElement('button');
  b.className = 'tab';
  b.id = 'graph-tab-' + g.id;
  b.setAttribute('role', 'tab');
  b.setAttribute('aria-selected', String(selected));
  const full = g.name + (g.parent_node ? ' (' + g.parent_kind + ' ' + g.parent_node + ')' : '');
  b.textContent = cut(g.name, 32) + (g.parent_node ? ' (' + g.parent_kind + ' ' + cut(g.parent_node, 24) + ')' : '');
  b.title = full;
  b.onclick = () => selectGraph(g.id);
  return b;
}
function addLabel(nav, text) {
  const label = document.createElement('span');
  label.className = 'label';
  label.textContent = text;
  nav.appendChild(label);
}
function buildGraphTabs() {
  const nav = $('graph-tabs');
  nav.textContent = '';
  const graphs = DATA.plans[0].graphs;
  nav.hidden = graphs.length <= 1;
  addLabel(nav, 'graph');
  const path = [];
  for (let g = graphs[state.graph]; g && path.length < 64; g = g.parent >= 0 ? graphs[g.parent] : null) path.unshift(g);
  path.forEach((g, k) => {
    if (k) nav.appendChild(document.createTextNode('\u203a'));
    nav.appendChild(graphButton(g, g.id === state.graph));
  });
  // Several entry points (an ExecuTorch program's methods): the others too.
  const entries = graphs.filter(g => g.parent < 0 && g !== path[0]);
  if (entries.length) {
    addLabel(nav, '\u00a0\u00a0entry points');
    for (const g of entries) nav.appendChild(graphButton(g, false));
  }
  const children = graphs.filter(g => g.parent === state.graph && g.id !== state.graph);
  if (children.length) {
    addLabel(nav, '\u00a0\u00a0bodies');
    for (const g of children) nav.appendChild(graphButton(g, false));
  }
  if (graphs.length > 2) {
    const sel = document.createElement('select');
    sel.id = 'graph-select';
    sel.setAttribute('aria-label', 'all graphs');
    for (const g of graphs) {
      const o = document.createElement('option');
      o.value = String(g.id);
      o.textContent = g.id + ': ' + cut(g.name, 48);
      o.selected = g.id === state.graph;
      sel.appendChild(o);
    }
    sel.onchange = () => selectGraph(Number(sel.value));
    nav.appendChild(sel);
  }
}
function buildPoolTabs() {
  const nav = $('pool-tabs');
  nav.textContent = '';
  const label = document.createElement('span');
  label.className = 'label';
  label.textContent = 'pool';
  nav.appendChild(label);
  for (const id of poolIds()) {
    const b = document.createElement('button');
    b.className = 'tab';
    b.id = 'pool-tab-' + id;
    b.setAttribute('role', 'tab');
    b.setAttribute('aria-selected', String(id === state.pool));
    const q = poolOf(0) && id === state.pool ? poolOf(0) : (graphOf(0) && graphOf(0).pools.find(x => x.mem_id === id));
    b.textContent = 'pool ' + id + (q ? ' \u00b7 ' + q.device + ' \u00b7 ' + fmtBytes(q.size) : '');
    b.onclick = () => selectPool(id);
    nav.appendChild(b);
  }
  if (poolIds().length === 0) {
    const s = document.createElement('span');
    s.textContent = 'nothing planned in this graph';
    nav.appendChild(s);
  }
}
function selectGraph(id) {
  if (!DATA.plans[0].graphs[id]) return false;
  state.graph = id;
  const ids = poolIds();
  state.pool = ids.length ? ids[0] : null;
  state.view = state.full = fullView();
  hideTooltip();
  $('cf-menu').hidden = true;
  buildGraphTabs();
  buildPoolTabs();
  updateStats();
  updateFoldControl();
  showSelection();
  requestDraw();
  return true;
}
function selectPool(id) {
  if (!poolIds().includes(id)) return false;
  state.pool = id;
  state.view = state.full = fullView();
  hideTooltip();
  buildPoolTabs();
  updateStats();
  showSelection();
  requestDraw();
  return true;
}

// ---- panels ----
function buildPanels() {
  const host = $('panels');
  DATA.plans.forEach((plan, p) => {
    const sec = document.createElement('section');
    sec.className = 'panel';
    sec.id = 'panel-' + p;
    sec.innerHTML = '<h2></h2><div class="stats"></div>' +
        '<canvas class="layout"></canvas><canvas class="live"></canvas>';
    sec.querySelector('h2').textContent = DATA.labels[p] +
        (DATA.labels[p] !== plan.algorithm ? ' (' + plan.algorithm + ')' : '');
    const layout = sec.querySelector('canvas.layout');
    const live = sec.querySelector('canvas.live');
    layout.id = 'layout-' + p;
    live.id = 'live-' + p;
    host.appendChild(sec);
    const panel = { p, sec, layout, live, stats: sec.querySelector('.stats'), drawn: [],
      markers: [], w: 0, h: 0 };
    panels.push(panel);
    attachEvents(panel);
  });
}
function updateStats() {
  for (const panel of panels) {
    const q = poolOf(panel.p);
    if (!q) { panel.stats.textContent = state.pool === null ? 'nothing planned' : 'no pool ' + state.pool + ' in this plan'; continue; }
    const g = graphOf(panel.p), pk = peakOf(panel.p);
    panel.stats.textContent = fmtBytes(q.size) + ' (lower bound ' + fmtBytes(q.lower_bound) +
        (q.lower_bound ? ', ratio ' + (q.size / q.lower_bound).toFixed(3) : '') +
        (q.optimal ? ', optimal' : '') + ') \u00b7 ' + fmtBytes(q.size) + ' instead of ' +
        fmtBytes(q.naive) + ', ' + pct(q.size, q.naive) + ' \u00b7 ' + q.buffers + ' tensors \u00b7 ' +
        q.algorithm + ' \u00b7 peak at ' + stepText(g, pk.step) + ': ' + fmtBytes(pk.live) + ' live in ' +
        pk.tensors.length + ' tensor' + (pk.tensors.length === 1 ? '' : 's');
  }
}

// ---- the peak ----
// The first step where live bytes peak (computed by memplan, as the report
// does) and the tensors of the pool live there, largest first.
function peakOf(p) {
  const g = graphOf(p), q = poolOf(p);
  if (!g || !q) return null;
  const T = g.tensors, step = q.peak_step;
  const tensors = (g.byPool.get(q.mem_id) || []).filter(i => T.first[i] <= step && step <= T.last[i]);
  tensors.sort((a, b) => T.size[b] - T.size[a] || T.offset[a] - T.offset[b] || a - b);
  return { step, live: q.peak_live, tensors };
}
function setPeakOnly(on) {
  state.peakOnly = !!on;
  $('peak-toggle').setAttribute('aria-pressed', String(state.peakOnly));
  requestDraw();
}

// ---- folding constant-only steps ----
function updateFoldControl() {
  const g = graphOf(0), n = g ? g.constant_steps.length : 0;
  $('fold-label').hidden = n === 0;
  $('fold-count').textContent = String(n);
  $('fold-constants').checked = state.fold;
}
function setFold(on) {
  state.fold = !!on;
  buildAxes();
  state.view = state.full = fullView();
  updateFoldControl();
  hideTooltip();
  requestDraw();
}

// ---- search and selection ----
// Case-insensitive: exact names first, then prefixes, then substrings, then
// names of other tensors sharing the storage (views); by graph and step.
function searchTensors(text) {
  const q = text.trim().toLowerCase(), out = [];
  if (!q) return out;
  for (const g of DATA.plans[0].graphs) {
    const T = g.tensors;
    for (let i = 0; i < T.name.length; i++) {
      const n = T.name[i].toLowerCase(), aka = T.aka ? T.aka[i].toLowerCase() : '';
      const rank = n === q ? 0 : n.startsWith(q) ? 1 : n.includes(q) ? 2 :
        aka && aka.split(', ').includes(q) ? 3 : aka.includes(q) ? 4 : -1;
      if (rank >= 0) out.push({ graph: g.id, i, rank });
    }
  }
  const first = m => DATA.plans[0].graphs[m.graph].tensors.first[m.i];
  out.sort((a, b) => a.rank - b.rank || a.graph - b.graph || first(a) - first(b) || a.i - b.i);
  return out;
}
function matchText(m) {
  const g = DATA.plans[0].graphs[m.graph], T = g.tensors;
  return T.name[m.i] + (T.aka && T.aka[m.i] ? ' (' + T.aka[m.i] + ')' : '') + ' \u00b7 ' +
      (DATA.plans[0].graphs.length > 1 ? g.name + ' \u00b7 ' : '') + 'pool ' + T.pool[m.i] +
      ' \u00b7 ' + fmtBytes(T.size[m.i]) + ' \u00b7 steps ' + T.first[m.i] + '..' + T.last[m.i];
}
let matches = [];
const MAX_RESULTS = 50;
function runSearch() {
  const text = $('search').value;
  matches = searchTensors(text);
  const list = $('search-results');
  list.textContent = '';
  matches.slice(0, MAX_RESULTS).forEach((m, k) => {
    const b = document.createElement('button');
    b.id = 'search-result-' + k;
    b.setAttribute('role', 'option');
    b.textContent = matchText(m);
    b.onclick = () => { selectTensor(m.graph, m.i); list.hidden = true; };
    list.appendChild(b);
  });
  list.hidden = matches.length === 0;
  $('search-status').textContent = !text.trim() ? '' : matches.length === 0
    ? 'no tensor matches' : matches.length + ' match' + (matches.length === 1 ? '' : 'es') +
      (matches.length > MAX_RESULTS ? ' (first ' + MAX_RESULTS + ' listed)' : '');
  return matches;
}
// Enter: the first match, then the next one each time.
function nextMatch() {
  if (!matches.length) return;
  const at = state.sel ? matches.findIndex(m => m.graph === state.sel.graph && m.i === state.sel.i) : -1;
  const m = matches[(at + 1) % matches.length];
  selectTensor(m.graph, m.i);
}
// Opens the tensor's graph and pool, highlights it and its lifetime, and
// brings it into view (the full view when it is outside the current one).
function selectTensor(graph, i) {
  const g = DATA.plans[0].graphs[graph];
  if (!g || !(i >= 0 && i < g.tensors.name.length)) return false;
  if (state.graph !== graph) selectGraph(graph);
  if (state.pool !== g.tensors.pool[i]) selectPool(g.tensors.pool[i]);
  state.sel = { graph, i };
  const T = g.tensors, v = state.view;
  const x0 = P(g, T.first[i]), x1 = P(g, T.last[i] + 1);
  if (x1 < v.x0 || x0 > v.x1 || T.offset[i] + T.size[i] < v.y0 || T.offset[i] > v.y1) state.view = state.full;
  showSelection();
  requestDraw();
  return true;
}
function clearSelection() { state.sel = null; showSelection(); requestDraw(); }
// The selected tensor as it appears in plan p: plan 0's own, or the tensor
// of the same name in the comparison plan (-1 when absent or in another pool).
function selectedIn(p) {
  const sel = state.sel;
  if (!sel || sel.graph !== state.graph) return -1;
  if (p === 0) return DATA.plans[0].graphs[sel.graph].tensors.pool[sel.i] === state.pool ? sel.i : -1;
  const g = graphOf(p);
  if (!g) return -1;
  const name = DATA.plans[0].graphs[sel.graph].tensors.name[sel.i];
  const k = g.tensors.name.indexOf(name);
  return k >= 0 && g.tensors.pool[k] === state.pool ? k : -1;
}
function showSelection() {
  const box = $('selection'), sel = state.sel;
  if (!sel) { box.hidden = true; box.textContent = ''; return; }
  const g = DATA.plans[0].graphs[sel.graph], T = g.tensors, i = sel.i;
  box.hidden = false;
  box.textContent = 'selected: ' + T.name[i] + (T.shape[i] ? ' \u00b7 ' + T.shape[i] + ' ' + T.dtype[i] : '') +
      ' \u00b7 ' + exactBytes(T.size[i]) + ' \u00b7 pool ' + T.pool[i] + ' offset ' + T.offset[i] +
      ' \u00b7 lifetime steps ' + T.first[i] + '..' + T.last[i] +
      (g.step_names.length ? ' (' + stepText(g, T.first[i]) + ' \u2192 ' + stepText(g, T.last[i]) + ')' : '');
}

// ---- drawing ----
let drawPending = false;
function requestDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => { drawPending = false; drawAll(); });
}
let lastDrawMs = 0;
function drawAll() {
  const t0 = performance.now();
  for (const panel of panels) { drawLayout(panel); drawLive(panel); }
  lastDrawMs = performance.now() - t0;
}

function setupCanvas(c) {
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth, h = c.clientHeight;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
  }
  const ctx = c.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return { ctx, w, h };
}
// Data <-> css pixel transforms for the current view.
function scales(w, h) {
  const v = state.view, pw = Math.max(1, w - M.left - M.right), ph = Math.max(1, h - M.top - M.bottom);
  const sx = pw / (v.x1 - v.x0), sy = ph / (v.y1 - v.y0);
  return { sx, sy, X: x => M.left + (x - v.x0) * sx, Y: y => M.top + ph - (y - v.y0) * sy, pw, ph };
}

function drawLayout(panel) {
  const { ctx, w, h } = setupCanvas(panel.layout);
  panel.w = w; panel.h = h;
  panel.drawn = [];
  panel.markers = [];
  panel.foldMarks = [];
  const g = graphOf(panel.p), q = poolOf(panel.p);
  if (!g || !q || !state.view) {
    ctx.fillStyle = '#888';
    ctx.fillText(state.pool === null ? 'nothing planned in this graph' : 'no such pool in this plan', M.left, 30);
    return;
  }
  const v = state.view, S = scales(w, h), T = g.tensors, XS = t => S.X(P(g, t));
  ctx.fillStyle = '#f4f4f4';
  ctx.fillRect(M.left, M.top, S.pw, S.ph);
  ctx.save();
  ctx.beginPath();
  ctx.rect(M.left, M.top, S.pw, S.ph);
  ctx.clip();
  if (q.reserved > 0) {
    ctx.fillStyle = '#d5d5d5';
    const y = S.Y(q.reserved);
    ctx.fillRect(M.left, y, S.pw, S.Y(0) - y);
  }
  // Culling: skip tensors outside the view (the list is sorted by first
  // step, so the scan stops at the right edge); tiny ones still get 1 px.
  // Rectangles are batched into one path per colour: one fill call per
  // role instead of one per tensor keeps 100k tensors interactive. With
  // the peak emphasised, tensors not live there go to faded paths.
  const list = g.byPool.get(q.mem_id) || [];
  const hov = state.hover && state.hover.p === panel.p ? state.hover.i : -1;
  const newPaths = () => SHADES.map(shades => shades.map(() => new Path2D()));
  const paths = newPaths(), faded = state.peakOnly ? newPaths() : null;
  const edges = new Path2D(), peakEdges = new Path2D();
  const ps = q.peak_step;
  let edgeCount = 0;
  for (const i of list) {
    const a = T.first[i], pa = P(g, a);
    if (pa > v.x1) break;
    const b = T.last[i] + 1, pb = P(g, b), o = T.offset[i], s = T.size[i];
    if (pb < v.x0 || o + s < v.y0 || o > v.y1) continue;
    const x = S.X(pa), y2 = S.Y(o);
    let x2 = S.X(pb), y = S.Y(o + s);
    if (x2 - x < 1) x2 = x + 1;
    if (y2 - y < 1) y = y2 - 1;
    const atPeak = a <= ps && ps <= T.last[i];
    (faded && !atPeak ? faded : paths)[T.role[i]][i % 3].rect(x, y, x2 - x, y2 - y);
    if (faded && atPeak) peakEdges.rect(x + 0.5, y + 0.5, x2 - x - 1, y2 - y - 1);
    else if (x2 - x > 4 && y2 - y > 4) { edges.rect(x + 0.5, y + 0.5, x2 - x - 1, y2 - y - 1); edgeCount++; }
    panel.drawn.push(i);
  }
  if (faded) {
    ctx.globalAlpha = 0.18;
    faded.forEach((byShade, r) => byShade.forEach((path, k) => { ctx.fillStyle = SHADES[r][k]; ctx.fill(path); }));
    ctx.globalAlpha = 1;
  }
  paths.forEach((byShade, r) => byShade.forEach((path, k) => { ctx.fillStyle = SHADES[r][k]; ctx.fill(path); }));
  if (edgeCount) {
    ctx.strokeStyle = 'rgba(255,255,255,.85)';
    ctx.lineWidth = 1;
    ctx.stroke(edges);
  }
  if (faded) {
    ctx.strokeStyle = PEAK_COLOUR;
    ctx.lineWidth = 1;
    ctx.stroke(peakEdges);
  }
  // The peak step: a vertical line through the middle of its column.
  const px = S.X(midStep(g, ps));
  ctx.strokeStyle = PEAK_COLOUR;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([2, 3]);
  ctx.beginPath(); ctx.moveTo(px, M.top); ctx.lineTo(px, M.top + S.ph); ctx.stroke();
  ctx.setLineDash([]);
  // The selected tensor's lifetime: a band over the whole pool; the tensor
  // itself: a thick outline.
  const sel = selectedIn(panel.p);
  if (sel >= 0) {
    const x = XS(T.first[sel]), x2 = Math.max(x + 2, XS(T.last[sel] + 1));
    ctx.fillStyle = SELECT_BAND;
    ctx.fillRect(x, M.top, x2 - x, S.ph);
    const y2 = S.Y(T.offset[sel]), y = Math.min(y2 - 2, S.Y(T.offset[sel] + T.size[sel]));
    ctx.strokeStyle = SELECT_COLOUR;
    ctx.lineWidth = 3;
    ctx.strokeRect(x, y, x2 - x, y2 - y);
  }
  if (hov >= 0) {
    const x = XS(T.first[hov]), x2 = Math.max(x + 1, XS(T.last[hov] + 1));
    const y2 = S.Y(T.offset[hov]), y = Math.min(y2 - 1, S.Y(T.offset[hov] + T.size[hov]));
    ctx.strokeStyle = '#000';
    ctx.lineWidth = 2;
    ctx.strokeRect(x, y, x2 - x, y2 - y);
  }
  // Arena top and lower bound.
  hline(ctx, S, q.size, '#555', []);
  if (q.lower_bound) hline(ctx, S, q.lower_bound, '#d62728', [5, 4]);
  ctx.restore();
  if (px >= M.left && px <= M.left + S.pw) {
    ctx.fillStyle = PEAK_COLOUR;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = px > M.left + S.pw - 120 ? 'right' : 'left';
    ctx.textBaseline = 'top';
    ctx.fillText(' peak ' + fmtBytes(q.peak_live) + ' ', px, M.top + 2);
  }
  // Control-flow markers: their bodies open on click.
  for (const c of g.control) {
    const x = S.X(midStep(g, c.step));
    if (x < M.left - 1 || x > M.left + S.pw + 1) continue;
    ctx.fillStyle = '#7b3fa0';
    ctx.beginPath();
    ctx.moveTo(x - 6, 2); ctx.lineTo(x + 6, 2); ctx.lineTo(x, M.top - 2); ctx.closePath();
    ctx.fill();
    panel.markers.push({ x, y: 8, c });
  }
  // Folded steps: a double slash on the step axis where each run was.
  ctx.strokeStyle = '#8a8a8a';
  ctx.lineWidth = 1.2;
  for (const f of g.folds) {
    const x = S.X(f.at);
    if (x < M.left - 1 || x > M.left + S.pw + 1) continue;
    const y = M.top + S.ph;
    ctx.beginPath();
    ctx.moveTo(x - 4, y + 5); ctx.lineTo(x - 1, y - 5);
    ctx.moveTo(x + 1, y + 5); ctx.lineTo(x + 4, y - 5);
    ctx.stroke();
    panel.foldMarks.push({ x, y, f });
  }
  axes(ctx, S, g);
}
function hline(ctx, S, bytes, colour, dash) {
  const y = S.Y(bytes);
  ctx.strokeStyle = colour;
  ctx.lineWidth = 1.5;
  ctx.setLineDash(dash);
  ctx.beginPath();
  ctx.moveTo(M.left, y); ctx.lineTo(M.left + S.pw, y);
  ctx.stroke();
  ctx.setLineDash([]);
}
function axes(ctx, S, g) {
  const v = state.view;
  ctx.fillStyle = '#444';
  ctx.strokeStyle = '#999';
  ctx.lineWidth = 1;
  ctx.font = '11px system-ui, sans-serif';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const xs = Math.max(1, Math.round(niceStep(v.x1 - v.x0, Math.max(2, S.pw / 90))));
  // Ticks at visible-step positions, labelled with the step starting there.
  for (let x = Math.ceil(v.x0 / xs) * xs; x <= v.x1; x += xs) {
    const px = S.X(x);
    ctx.beginPath(); ctx.moveTo(px, M.top + S.ph); ctx.lineTo(px, M.top + S.ph + 4); ctx.stroke();
    ctx.fillText(String(x >= P(g, g.steps) ? g.steps : stepAt(g, x)), px, M.top + S.ph + 6);
  }
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const t of byteTicks(v.y0, v.y1, Math.max(2, S.ph / 60))) {
    const py = S.Y(t.value);
    ctx.beginPath(); ctx.moveTo(M.left - 4, py); ctx.lineTo(M.left, py); ctx.stroke();
    ctx.fillText(t.label, M.left - 6, py);
  }
}

function drawLive(panel) {
  const { ctx, w, h } = setupCanvas(panel.live);
  const g = graphOf(panel.p), q = poolOf(panel.p);
  if (!g || !q || !state.view) return;
  const v = state.view;
  const pw = Math.max(1, w - M.left - M.right), top = 14, ph = Math.max(1, h - top - 20);
  const ymax = Math.max(1, q.size, q.lower_bound) * 1.05;
  const X = x => M.left + (x - v.x0) * pw / (v.x1 - v.x0), Y = y => top + ph - y * ph / ymax;
  const PX = t => X(P(g, t));
  ctx.fillStyle = '#f4f4f4';
  ctx.fillRect(M.left, top, pw, ph);
  ctx.save();
  ctx.beginPath(); ctx.rect(M.left, top, pw, ph); ctx.clip();
  const sel = selectedIn(panel.p), T = g.tensors;
  if (sel >= 0) {
    const x = PX(T.first[sel]);
    ctx.fillStyle = SELECT_BAND;
    ctx.fillRect(x, top, Math.max(2, PX(T.last[sel] + 1) - x), ph);
  }
  // Step curve of live bytes (change points t0, b0, t1, b1, ...): only
  // the points in view, and at most one vertical run per pixel column
  // (its max), so a 100k-point curve costs what the canvas is wide.
  // Bytes held for control-flow bodies sit under the curve (the lower
  // bound counts them too).
  const L = q.live, base = q.reserved;
  if (base > 0) { ctx.fillStyle = '#d5d5d5'; ctx.fillRect(M.left, Y(base), pw, Y(0) - Y(base)); }
  ctx.fillStyle = 'rgba(31,95,168,.25)';
  ctx.strokeStyle = '#1f5fa8';
  ctx.lineWidth = 1.5;
  let lo = 0, hi = L.length / 2;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (P(g, L[2 * mid]) <= v.x0) lo = mid + 1; else hi = mid; }
  let k = Math.max(0, lo - 1) * 2;
  let prev = lo > 0 ? L[2 * (lo - 1) + 1] : 0;
  if (lo > 0) k += 2;
  ctx.beginPath();
  ctx.moveTo(X(v.x0), Y(base));
  ctx.lineTo(X(v.x0), Y(base + prev));
  while (k < L.length && P(g, L[k]) <= v.x1) {
    const col = Math.floor(PX(L[k]));
    let peak = Math.max(prev, L[k + 1]), last = L[k + 1];
    k += 2;
    while (k < L.length && P(g, L[k]) <= v.x1 && Math.floor(PX(L[k])) === col) {
      peak = Math.max(peak, L[k + 1]); last = L[k + 1]; k += 2;
    }
    ctx.lineTo(col, Y(base + prev));
    ctx.lineTo(col, Y(base + peak));
    ctx.lineTo(col + 1, Y(base + peak));
    ctx.lineTo(col + 1, Y(base + last));
    prev = last;
  }
  const xEnd = X(Math.min(v.x1, P(g, Math.max(g.steps, L.length ? L[L.length - 2] : 0))));
  ctx.lineTo(xEnd, Y(base + prev));
  ctx.lineTo(xEnd, Y(base));
  ctx.closePath();
  ctx.fill();
  ctx.stroke();
  const lineAt = (bytes, colour, dash) => {
    ctx.strokeStyle = colour; ctx.setLineDash(dash); ctx.beginPath();
    ctx.moveTo(M.left, Y(bytes)); ctx.lineTo(M.left + pw, Y(bytes)); ctx.stroke(); ctx.setLineDash([]);
  };
  lineAt(q.size, '#555', []);
  if (q.lower_bound) lineAt(q.lower_bound, '#d62728', [5, 4]);
  // The peak: where the curve first reaches its maximum.
  const px = X(midStep(g, q.peak_step));
  ctx.strokeStyle = PEAK_COLOUR;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([2, 3]);
  ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, top + ph); ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = PEAK_COLOUR;
  ctx.beginPath(); ctx.arc(px, Y(base + q.peak_live), 3.5, 0, 2 * Math.PI); ctx.fill();
  ctx.restore();
  ctx.fillStyle = '#444';
  ctx.font = '11px system-ui, sans-serif';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText('live bytes' + (q.reserved ? ' + reserved' : '') + ' (blue' +
      ') \u00b7 lower bound ' + fmtBytes(q.lower_bound) + ' (red, dashed) \u00b7 arena ' +
      fmtBytes(q.size) + ' (grey) \u00b7 peak at step ' + q.peak_step, M.left, 0);
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.fillText(fmtBytes(q.size), M.left - 6, Y(q.size));
  ctx.fillText('0 B', M.left - 6, Y(0));
}

// ---- hit testing and tooltip ----
function hitTensor(panel, mx, my) {
  const g = graphOf(panel.p), q = poolOf(panel.p);
  if (!g || !q || !state.view) return -1;
  const S = scales(panel.w, panel.h), T = g.tensors;
  if (mx < M.left || mx > M.left + S.pw || my < M.top || my > M.top + S.ph) return -1;
  // Topmost first: the last drawn that contains the point (1 px minimum).
  for (let k = panel.drawn.length - 1; k >= 0; k--) {
    const i = panel.drawn[k];
    const x = S.X(P(g, T.first[i])), y2 = S.Y(T.offset[i]);
    let x2 = S.X(P(g, T.last[i] + 1)), y = S.Y(T.offset[i] + T.size[i]);
    if (x2 - x < 1) x2 = x + 1;
    if (y2 - y < 1) y = y2 - 1;
    if (mx >= x && mx <= x2 && my >= y && my <= y2) return i;
  }
  return -1;
}
function stepText(g, t) {
  const n = g.step_names[t], op = g.step_ops[t];
  if (n === undefined) return 'step ' + t;
  return 'step ' + t + ' ' + (op && op !== n ? n + ' (' + op + ')' : n);
}
function tensorText(g, i) {
  const T = g.tensors;
  const lines = [T.name[i]];
  if (T.aka && T.aka[i]) lines.push('also ' + T.aka[i]);
  const meta = [];
  if (T.op[i] !== '-') meta.push('op ' + T.op[i]);
  if (T.shape[i]) meta.push(T.shape[i] + ' ' + T.dtype[i]);
  if (meta.length) lines.push(meta.join(' \u00b7 '));
  lines.push('bytes ' + exactBytes(T.size[i]) + ' \u00b7 ' + DATA.roles[T.role[i]]);
  lines.push('offset ' + T.offset[i] + ' .. ' + (T.offset[i] + T.size[i]));
  lines.push('lifetime steps ' + T.first[i] + '..' + T.last[i]);
  if (g.step_names.length) lines.push('  from ' + stepText(g, T.first[i]), '  to   ' + stepText(g, T.last[i]));
  return lines.join('\n');
}
function showTooltip(text, cx, cy) {
  const tip = $('tooltip');
  tip.textContent = text;
  tip.hidden = false;
  const r = tip.getBoundingClientRect();
  let x = cx + 14, y = cy + 14;
  if (x + r.width > window.innerWidth - 4) x = Math.max(4, cx - r.width - 14);
  if (y + r.height > window.innerHeight - 4) y = Math.max(4, cy - r.height - 14);
  tip.style.left = x + 'px';
  tip.style.top = y + 'px';
}
function hideTooltip() {
  $('tooltip').hidden = true;
  if (state.hover) { state.hover = null; requestDraw(); }
}
function hover(panel, ev) {
  const r = panel.layout.getBoundingClientRect();
  const mx = ev.clientX - r.left, my = ev.clientY - r.top;
  const marker = panel.markers.find(m => Math.abs(m.x - mx) <= 7 && my <= M.top);
  if (marker) {
    showTooltip(marker.c.kind + ' ' + marker.c.name + ' (' + marker.c.op + ') at step ' + marker.c.step +
        '\nclick to open: ' + marker.c.subgraphs.map(s => graphName(s)).join(', '), ev.clientX, ev.clientY);
    panel.layout.style.cursor = 'pointer';
    return;
  }
  const fold = panel.foldMarks.find(m => Math.abs(m.x - mx) <= 6 && Math.abs(m.y - my) <= 8);
  if (fold) {
    const n = fold.f.to - fold.f.from + 1;
    showTooltip((n === 1 ? 'step ' + fold.f.from : 'steps ' + fold.f.from + '..' + fold.f.to) +
        ' folded: ' + n + ' step' + (n === 1 ? '' : 's') + ' that only produce constants', ev.clientX, ev.clientY);
    return;
  }
  panel.layout.style.cursor = '';
  const i = hitTensor(panel, mx, my);
  if (i < 0) { hideTooltip(); return; }
  const g = graphOf(panel.p);
  if (!state.hover || state.hover.p !== panel.p || state.hover.i !== i) {
    state.hover = { p: panel.p, i };
    requestDraw();
  }
  showTooltip(tensorText(g, i), ev.clientX, ev.clientY);
}
function graphName(id) { const g = DATA.plans[0].graphs[id]; return g ? g.name : 'graph ' + id; }
function openMarker(m, cx, cy) {
  const subs = m.c.subgraphs.filter(s => DATA.plans[0].graphs[s]);
  if (subs.length === 1) { selectGraph(subs[0]); return; }
  const menu = $('cf-menu');
  menu.textContent = '';
  for (const s of subs) {
    const b = document.createElement('button');
    b.className = 'tab';
    b.id = 'cf-open-' + s;
    b.textContent = graphName(s);
    b.onclick = () => { menu.hidden = true; selectGraph(s); };
    menu.appendChild(b);
  }
  menu.style.left = cx + 'px';
  menu.style.top = cy + 'px';
  menu.hidden = subs.length === 0;
}

// ---- zoom and pan ----
function zoomAt(panel, mx, my, fx, fy) {
  const v = state.view, S = scales(panel.w, panel.h);
  const dx = v.x0 + (mx - M.left) / S.sx, dy = v.y0 + (M.top + S.ph - my) / S.sy;
  const full = state.full;
  const nx = Math.min(full.x1 - full.x0, Math.max(1e-3 * (full.x1 - full.x0), (v.x1 - v.x0) * fx));
  const ny = Math.min(full.y1 - full.y0, Math.max(1e-9 * (full.y1 - full.y0) + 1e-9, (v.y1 - v.y0) * fy));
  const tx = (dx - v.x0) / (v.x1 - v.x0), ty = (dy - v.y0) / (v.y1 - v.y0);
  state.view = clampView({ x0: dx - tx * nx, x1: dx - tx * nx + nx, y0: dy - ty * ny, y1: dy - ty * ny + ny });
  requestDraw();
}
function clampView(v) {
  const full = state.full;
  const w = v.x1 - v.x0, h = v.y1 - v.y0;
  const x0 = Math.min(Math.max(v.x0, full.x0), full.x1 - w);
  const y0 = Math.min(Math.max(v.y0, full.y0), full.y1 - h);
  return { x0, x1: x0 + w, y0, y1: y0 + h };
}
function attachEvents(panel) {
  const c = panel.layout;
  c.addEventListener('wheel', ev => {
    ev.preventDefault();
    const r = c.getBoundingClientRect();
    const f = Math.pow(1.0015, ev.deltaY);
    const both = ev.ctrlKey || ev.metaKey;
    zoomAt(panel, ev.clientX - r.left, ev.clientY - r.top, ev.shiftKey && !both ? 1 : f,
        ev.shiftKey || both ? f : 1);
  }, { passive: false });
  // Two fingers pinch-zoom both axes around their midpoint.
  const touches = new Map();
  let pinch = null;
  const spread = () => { const [a, b] = [...touches.values()]; return Math.hypot(a.x - b.x, a.y - b.y); };
  const forget = ev => { touches.delete(ev.pointerId); if (touches.size < 2) pinch = null; };
  c.addEventListener('pointercancel', forget);
  c.addEventListener('pointerdown', ev => {
    try { c.setPointerCapture(ev.pointerId); } catch { /* synthetic pointer */ }
    touches.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
    if (touches.size === 2) { state.drag = null; pinch = { d: Math.max(1, spread()), view: state.view }; return; }
    state.drag = { panel, x: ev.clientX, y: ev.clientY, view: state.view, moved: false };
  });
  c.addEventListener('pointermove', ev => {
    if (touches.has(ev.pointerId)) touches.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
    if (pinch && touches.size === 2) {
      const [a, b] = [...touches.values()], r = c.getBoundingClientRect();
      const f = pinch.d / Math.max(1, spread());
      state.view = pinch.view;
      zoomAt(panel, (a.x + b.x) / 2 - r.left, (a.y + b.y) / 2 - r.top, f, f);
      hideTooltip();
      return;
    }
    const d = state.drag;
    if (d && d.panel === panel) {
      const dx = ev.clientX - d.x, dy = ev.clientY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (d.moved) {
        c.classList.add('dragging');
        const S = scales(panel.w, panel.h);
        state.view = clampView({ x0: d.view.x0 - dx / S.sx, x1: d.view.x1 - dx / S.sx,
          y0: d.view.y0 + dy / S.sy, y1: d.view.y1 + dy / S.sy });
        hideTooltip();
        requestDraw();
        return;
      }
    }
    hover(panel, ev);
  });
  c.addEventListener('pointerup', ev => {
    forget(ev);
    const d = state.drag;
    state.drag = null;
    c.classList.remove('dragging');
    if (!d || d.moved) return;
    // A click or tap: open a marker's body, or show the tensor under it.
    const r = c.getBoundingClientRect();
    const mx = ev.clientX - r.left, my = ev.clientY - r.top;
    const m = panel.markers.find(k => Math.abs(k.x - mx) <= 7 && my <= M.top);
    if (m) { openMarker(m, ev.clientX, ev.clientY); return; }
    // A tensor: select it (its lifetime lights up); empty space: unselect.
    const i = hitTensor(panel, mx, my);
    if (i >= 0) {
      const name = graphOf(panel.p).tensors.name[i];
      const k = panel.p === 0 ? i : graphOf(0).tensors.name.indexOf(name);
      if (k >= 0) selectTensor(state.graph, k);
    } else if (my >= M.top) {
      clearSelection();
    }
    hover(panel, ev);
  });
  c.addEventListener('pointerleave', () => { if (!state.drag) hideTooltip(); });
  c.addEventListener('dblclick', () => { state.view = state.full; requestDraw(); });
  panel.live.addEventListener('pointermove', ev => {
    const g = graphOf(panel.p), q = poolOf(panel.p);
    if (!g || !q) return;
    const r = panel.live.getBoundingClientRect();
    const pw = Math.max(1, r.width - M.left - M.right), v = state.view;
    const x = v.x0 + (ev.clientX - r.left - M.left) * (v.x1 - v.x0) / pw;
    if (x < 0 || x >= P(g, g.steps)) { hideTooltip(); return; }
    const t = stepAt(g, x);
    let live = 0;
    for (let k = 0; k < q.live.length && q.live[k] <= t; k += 2) live = q.live[k + 1];
    showTooltip(stepText(g, t) + '\nlive ' + exactBytes(live) +
        (q.reserved ? '\n+ ' + exactBytes(q.reserved) + ' reserved for bodies' : ''), ev.clientX, ev.clientY);
  });
  panel.live.addEventListener('pointerleave', hideTooltip);
}
document.addEventListener('keydown', ev => { if (ev.key === 'Escape') $('cf-menu').hidden = true; });

// ---- tool bar: search, peak, folding ----
function attachTools() {
  const box = $('search'), list = $('search-results');
  box.addEventListener('input', runSearch);
  box.addEventListener('focus', () => { if (matches.length) list.hidden = false; });
  box.addEventListener('keydown', ev => {
    if (ev.key === 'Enter') { ev.preventDefault(); if (!matches.length) runSearch(); nextMatch(); list.hidden = true; }
    if (ev.key === 'Escape') { box.value = ''; runSearch(); clearSelection(); }
  });
  document.addEventListener('pointerdown', ev => {
    if (!list.contains(ev.target) && ev.target !== box) list.hidden = true;
  });
  $('peak-toggle').onclick = () => setPeakOnly(!state.peakOnly);
  $('fold-constants').onchange = ev => setFold(ev.target.checked);
}

// ---- page ----
function legend() {
  const host = $('legend');
  for (const r of ['input', 'output', 'intermediate', 'mutable', 'constant']) {
    const s = document.createElement('span');
    s.innerHTML = '<span class="swatch"></span>';
    s.firstChild.style.background = ROLE_COLOURS[r];
    s.appendChild(document.createTextNode(r + '  '));
    host.appendChild(s);
  }
}
$('title').textContent = DATA.title;
document.title = DATA.title + ' - memplan';
{
  const main = DATA.plans[0].graphs[0];
  let total = 0, naive = 0;
  if (main) for (const q of main.pools) { total += q.size; naive += q.naive; }
  $('summary').textContent = 'algorithm ' + DATA.plans[0].algorithm + ' \u00b7 ' +
      (main ? main.pools.length : 0) + ' pool(s) \u00b7 ' + fmtBytes(total) + ' instead of ' +
      fmtBytes(naive) + ', ' + pct(total, naive) +
      (DATA.plans[0].planning_seconds !== undefined ? ' \u00b7 planned in ' +
       DATA.plans[0].planning_seconds.toFixed(2) + ' s' : '') +
      ' \u00b7 ' + DATA.plans[0].graphs.length + ' graph(s)';
}
legend();
attachTools();
buildPanels();
selectGraph(0);
drawAll();
window.addEventListener('resize', requestDraw);

// Page box of tensor i of the current pool in panel p, clipped to the plot.
function rectBox(p, i) {
  const panel = panels[p], g = graphOf(p), T = g.tensors;
  const S = scales(panel.w, panel.h), r = panel.layout.getBoundingClientRect();
  const x0 = Math.max(M.left, S.X(P(g, T.first[i]))), x1 = Math.min(M.left + S.pw, S.X(P(g, T.last[i] + 1)));
  const y0 = Math.max(M.top, S.Y(T.offset[i] + T.size[i])), y1 = Math.min(M.top + S.ph, S.Y(T.offset[i]));
  return { x0: r.left + x0, x1: r.left + x1, y0: r.top + y0, y1: r.top + y1 };
}
function memplanViewerAxis() { return window.memplanViewer.axis(); }

// Test hook: stable, small, read-mostly.
window.memplanViewer = {
  graphs: () => DATA.plans[0].graphs.map(g => ({ id: g.id, name: g.name, parent: g.parent })),
  pools: () => poolIds(),
  currentGraph: () => state.graph,
  currentPool: () => state.pool,
  selectGraph: id => { const ok = selectGraph(id); drawAll(); return ok; },
  selectPool: id => { const ok = selectPool(id); drawAll(); return ok; },
  plans: () => DATA.plans.length,
  rectCount: (p = 0) => (panels[p] ? panels[p].drawn.length : 0),
  tensorCount: (p = 0) => { const g = graphOf(p); return g && state.pool !== null ? (g.byPool.get(state.pool) || []).length : 0; },
  tooltipText: () => ($('tooltip').hidden ? '' : $('tooltip').textContent),
  view: () => Object.assign({}, state.view),
  resetView: () => { state.view = state.full; drawAll(); },
  drawMs: () => lastDrawMs,          // time of the last full redraw
  zoom: (fx, fy = 1, p = 0) => {     // zoom around the layout's centre
    const panel = panels[p];
    if (panel && state.view) { zoomAt(panel, M.left + (panel.w - M.left - M.right) / 2, panel.h / 2, fx, fy); drawAll(); }
    return Object.assign({}, state.view);
  },
  // Page coordinates of the centre of the k-th largest drawn rectangle.
  rectCenter: (k = 0, p = 0) => {
    const panel = panels[p], g = graphOf(p);
    if (!panel || !g) return null;
    const S = scales(panel.w, panel.h), T = g.tensors;
    const area = i => (Math.max(1, S.X(P(g, T.last[i] + 1)) - S.X(P(g, T.first[i])))) * Math.max(1, T.size[i] * S.sy);
    const order = panel.drawn.slice().sort((a, b) => area(b) - area(a) || a - b);
    const i = order[k];
    if (i === undefined) return null;
    const b = rectBox(p, i);
    return { x: (b.x0 + b.x1) / 2, y: (b.y0 + b.y1) / 2, name: T.name[i] };
  },
  // Search as a user types: [{name, graph, pool, first, last}] (at most 50).
  search: text => {
    $('search').value = text;
    return runSearch().slice(0, MAX_RESULTS).map(m => {
      const T = DATA.plans[0].graphs[m.graph].tensors;
      return { name: T.name[m.i], graph: m.graph, pool: T.pool[m.i], first: T.first[m.i], last: T.last[m.i] };
    });
  },
  // The selected tensor, or null.
  selected: () => {
    if (!state.sel) return null;
    const T = DATA.plans[0].graphs[state.sel.graph].tensors, i = state.sel.i;
    return { name: T.name[i], graph: state.sel.graph, pool: T.pool[i], first: T.first[i], last: T.last[i],
      offset: T.offset[i], size: T.size[i] };
  },
  // Page boxes of a tensor of the current pool in panel p (default: the
  // selected one) and of its lifetime band; null when not drawn.
  rectOf: (p = 0, i = selectedIn(p)) => (i >= 0 && panels[p] ? rectBox(p, i) : null),
  bandOf: (p = 0) => {
    const i = selectedIn(p), panel = panels[p], g = graphOf(p);
    if (i < 0 || !panel || !g) return null;
    const S = scales(panel.w, panel.h), r = panel.layout.getBoundingClientRect(), T = g.tensors;
    const x0 = S.X(P(g, T.first[i])), x1 = Math.max(x0 + 2, S.X(P(g, T.last[i] + 1)));
    return { x0: r.left + x0, x1: r.left + x1, y0: r.top + M.top, y1: r.top + M.top + S.ph };
  },
  // The peak of the current pool in panel p: step, live bytes, the names
  // of the tensors live there (largest first) and the page x of its marker.
  peak: (p = 0) => {
    const pk = peakOf(p), panel = panels[p], g = graphOf(p);
    if (!pk || !panel) return null;
    const S = scales(panel.w, panel.h), r = panel.layout.getBoundingClientRect();
    return { step: pk.step, live: pk.live, tensors: pk.tensors.map(i => g.tensors.name[i]),
      indexes: pk.tensors, x: r.left + S.X(midStep(g, pk.step)), peakOnly: state.peakOnly };
  },
  // Steps of the current graph: all, shown (visible width), folded.
  axis: () => {
    const g = graphOf(0);
    return { steps: g.steps, shown: P(g, g.steps), folded: g.folded.length,
      constantSteps: g.constant_steps.length, fold: state.fold, runs: g.folds.length };
  },
  setFold: on => { setFold(on); drawAll(); return memplanViewerAxis(); },
  setPeakOnly: on => { setPeakOnly(on); drawAll(); return state.peakOnly; },
  tensorIndex: (name, p = 0) => { const g = graphOf(p); return g ? g.tensors.name.indexOf(name) : -1; },
  clearSelection: () => { clearSelection(); drawAll(); },
  redraw: () => { drawAll(); return lastDrawMs; },
  // The drawn tensor of panel p whose lifetime spans the most steps that
  // only produce constants (the shorter lifetime on ties; -1: none).
  spanningFolds: (p = 0) => {
    const panel = panels[p], g = graphOf(p);
    if (!panel || !g) return -1;
    const T = g.tensors;
    let best = -1, bestCount = 0;
    for (const i of panel.drawn) {
      const count = foldedBefore(g, T.last[i] + 1) - foldedBefore(g, T.first[i]);
      const span = T.last[i] - T.first[i];
      if (count > bestCount || (count === bestCount && count > 0 && span < T.last[best] - T.first[best])) {
        best = i; bestCount = count;
      }
    }
    return best;
  },
  controlMarkers: (p = 0) => {
    const panel = panels[p];
    if (!panel) return [];
    const r = panel.layout.getBoundingClientRect();
    return panel.markers.map(m => ({ x: r.left + m.x, y: r.top + m.y, name: m.c.name, subgraphs: m.c.subgraphs }));
  },
};
})();
