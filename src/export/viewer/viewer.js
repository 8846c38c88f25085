// The memplan plan viewer: layout, zoom, pan, tooltips, pool and graph tabs
// over the plan JSON embedded in the page (html_viewer.cpp). Embedded into
// the page at build time with viewer.css and viewer.html. Element ids are
// stable: tests and users' scripts rely on them (graph-tabs,
// graph-tab-<id>, pool-tabs, pool-tab-<mem_id>, panel-<i>, layout-<i>,
// live-<i>, tooltip, cf-menu). window.memplanViewer is the test hook.
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

const state = { graph: 0, pool: null, view: null, full: null, hover: null, drag: null };
const panels = [];

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
    if (g) steps = Math.max(steps, g.steps);
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
    panel.stats.textContent = fmtBytes(q.size) + ' (lower bound ' + fmtBytes(q.lower_bound) +
        (q.lower_bound ? ', ratio ' + (q.size / q.lower_bound).toFixed(3) : '') +
        (q.optimal ? ', optimal' : '') + ') \u00b7 ' + fmtBytes(q.size) + ' instead of ' +
        fmtBytes(q.naive) + ', ' + pct(q.size, q.naive) + ' \u00b7 ' + q.buffers + ' tensors \u00b7 ' +
        q.algorithm;
  }
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
  const g = graphOf(panel.p), q = poolOf(panel.p);
  if (!g || !q || !state.view) {
    ctx.fillStyle = '#888';
    ctx.fillText(state.pool === null ? 'nothing planned in this graph' : 'no such pool in this plan', M.left, 30);
    return;
  }
  const v = state.view, S = scales(w, h), T = g.tensors;
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
  // role instead of one per tensor keeps 100k tensors interactive.
  const list = g.byPool.get(q.mem_id) || [];
  const hov = state.hover && state.hover.p === panel.p ? state.hover.i : -1;
  const paths = SHADES.map(shades => shades.map(() => new Path2D())), edges = new Path2D();
  let edgeCount = 0;
  for (const i of list) {
    const a = T.first[i];
    if (a > v.x1) break;
    const b = T.last[i] + 1, o = T.offset[i], s = T.size[i];
    if (b < v.x0 || o + s < v.y0 || o > v.y1) continue;
    const x = S.X(a), y2 = S.Y(o);
    let x2 = S.X(b), y = S.Y(o + s);
    if (x2 - x < 1) x2 = x + 1;
    if (y2 - y < 1) y = y2 - 1;
    paths[T.role[i]][i % 3].rect(x, y, x2 - x, y2 - y);
    if (x2 - x > 4 && y2 - y > 4) { edges.rect(x + 0.5, y + 0.5, x2 - x - 1, y2 - y - 1); edgeCount++; }
    panel.drawn.push(i);
  }
  paths.forEach((byShade, r) => byShade.forEach((path, k) => { ctx.fillStyle = SHADES[r][k]; ctx.fill(path); }));
  if (edgeCount) {
    ctx.strokeStyle = 'rgba(255,255,255,.85)';
    ctx.lineWidth = 1;
    ctx.stroke(edges);
  }
  if (hov >= 0) {
    const x = S.X(T.first[hov]), x2 = Math.max(x + 1, S.X(T.last[hov] + 1));
    const y2 = S.Y(T.offset[hov]), y = Math.min(y2 - 1, S.Y(T.offset[hov] + T.size[hov]));
    ctx.strokeStyle = '#000';
    ctx.lineWidth = 2;
    ctx.strokeRect(x, y, x2 - x, y2 - y);
  }
  // Arena top and lower bound.
  hline(ctx, S, q.size, '#555', []);
  if (q.lower_bound) hline(ctx, S, q.lower_bound, '#d62728', [5, 4]);
  ctx.restore();
  // Control-flow markers: their bodies open on click.
  for (const c of g.control) {
    const x = S.X(c.step + 0.5);
    if (x < M.left - 1 || x > M.left + S.pw + 1) continue;
    ctx.fillStyle = '#7b3fa0';
    ctx.beginPath();
    ctx.moveTo(x - 6, 2); ctx.lineTo(x + 6, 2); ctx.lineTo(x, M.top - 2); ctx.closePath();
    ctx.fill();
    panel.markers.push({ x, y: 8, c });
  }
  axes(ctx, S);
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
function axes(ctx, S) {
  const v = state.view;
  ctx.fillStyle = '#444';
  ctx.strokeStyle = '#999';
  ctx.lineWidth = 1;
  ctx.font = '11px system-ui, sans-serif';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const xs = Math.max(1, Math.round(niceStep(v.x1 - v.x0, Math.max(2, S.pw / 90))));
  for (let x = Math.ceil(v.x0 / xs) * xs; x <= v.x1; x += xs) {
    const px = S.X(x);
    ctx.beginPath(); ctx.moveTo(px, M.top + S.ph); ctx.lineTo(px, M.top + S.ph + 4); ctx.stroke();
    ctx.fillText(String(x), px, M.top + S.ph + 6);
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
  ctx.fillStyle = '#f4f4f4';
  ctx.fillRect(M.left, top, pw, ph);
  ctx.save();
  ctx.beginPath(); ctx.rect(M.left, top, pw, ph); ctx.clip();
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
  while (lo < hi) { const mid = (lo + hi) >> 1; if (L[2 * mid] <= v.x0) lo = mid + 1; else hi = mid; }
  let k = Math.max(0, lo - 1) * 2;
  let prev = lo > 0 ? L[2 * (lo - 1) + 1] : 0;
  if (lo > 0) k += 2;
  ctx.beginPath();
  ctx.moveTo(X(v.x0), Y(base));
  ctx.lineTo(X(v.x0), Y(base + prev));
  while (k < L.length && L[k] <= v.x1) {
    const col = Math.floor(X(L[k]));
    let peak = Math.max(prev, L[k + 1]), last = L[k + 1];
    k += 2;
    while (k < L.length && L[k] <= v.x1 && Math.floor(X(L[k])) === col) {
      peak = Math.max(peak, L[k + 1]); last = L[k + 1]; k += 2;
    }
    ctx.lineTo(col, Y(base + prev));
    ctx.lineTo(col, Y(base + peak));
    ctx.lineTo(col + 1, Y(base + peak));
    ctx.lineTo(col + 1, Y(base + last));
    prev = last;
  }
  const xEnd = X(Math.min(v.x1, Math.max(g.steps, L.length ? L[L.length - 2] : 0)));
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
  ctx.restore();
  ctx.fillStyle = '#444';
  ctx.font = '11px system-ui, sans-serif';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText('live bytes' + (q.reserved ? ' + reserved' : '') + ' (blue' +
      ') \u00b7 lower bound ' + fmtBytes(q.lower_bound) + ' (red, dashed) \u00b7 arena ' +
      fmtBytes(q.size) + ' (grey)', M.left, 0);
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
    const x = S.X(T.first[i]), y2 = S.Y(T.offset[i]);
    let x2 = S.X(T.last[i] + 1), y = S.Y(T.offset[i] + T.size[i]);
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
    hover(panel, ev);
  });
  c.addEventListener('pointerleave', () => { if (!state.drag) hideTooltip(); });
  c.addEventListener('dblclick', () => { state.view = state.full; requestDraw(); });
  panel.live.addEventListener('pointermove', ev => {
    const g = graphOf(panel.p), q = poolOf(panel.p);
    if (!g || !q) return;
    const r = panel.live.getBoundingClientRect();
    const pw = Math.max(1, r.width - M.left - M.right), v = state.view;
    const t = Math.floor(v.x0 + (ev.clientX - r.left - M.left) * (v.x1 - v.x0) / pw);
    if (t < 0 || t >= g.steps) { hideTooltip(); return; }
    let live = 0;
    for (let k = 0; k < q.live.length && q.live[k] <= t; k += 2) live = q.live[k + 1];
    showTooltip(stepText(g, t) + '\nlive ' + exactBytes(live) +
        (q.reserved ? '\n+ ' + exactBytes(q.reserved) + ' reserved for bodies' : ''), ev.clientX, ev.clientY);
  });
  panel.live.addEventListener('pointerleave', hideTooltip);
}
document.addEventListener('keydown', ev => { if (ev.key === 'Escape') $('cf-menu').hidden = true; });

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
buildPanels();
selectGraph(0);
drawAll();
window.addEventListener('resize', requestDraw);

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
    const S = scales(panel.w, panel.h), T = g.tensors, r = panel.layout.getBoundingClientRect();
    const area = i => (Math.max(1, S.X(T.last[i] + 1) - S.X(T.first[i]))) * Math.max(1, T.size[i] * S.sy);
    const order = panel.drawn.slice().sort((a, b) => area(b) - area(a) || a - b);
    const i = order[k];
    if (i === undefined) return null;
    const x0 = Math.max(M.left, S.X(T.first[i])), x1 = Math.min(M.left + S.pw, S.X(T.last[i] + 1));
    const y0 = Math.max(M.top, S.Y(T.offset[i] + T.size[i])), y1 = Math.min(M.top + S.ph, S.Y(T.offset[i]));
    return { x: r.left + (x0 + x1) / 2, y: r.top + (y0 + y1) / 2, name: T.name[i] };
  },
  controlMarkers: (p = 0) => {
    const panel = panels[p];
    if (!panel) return [];
    const r = panel.layout.getBoundingClientRect();
    return panel.markers.map(m => ({ x: r.left + m.x, y: r.top + m.y, name: m.c.name, subgraphs: m.c.subgraphs }));
  },
};
})();
