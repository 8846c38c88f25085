// Browser test of the memplan HTML viewer: drives the system Chromium with
// playwright-core over every page in MEMPLAN_VIEWER_DIR (written by run.sh):
// rectangles drawn, tooltip on hover, pool and graph tabs, zoom and pan,
// the comparison panel, finding a tensor by name (it and its lifetime
// highlighted, read back from the canvas pixels), the peak step and its
// live tensors (against memplan's own JSON report), folding of steps that
// only produce constants, and a screenshot that must not be blank.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';

/* global window, document, memplanViewer -- page.evaluate() callbacks run in the page */

const DIR = process.env.MEMPLAN_VIEWER_DIR;
const CHROMIUM = process.env.MEMPLAN_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// ---- PNG decoding (8-bit RGB/RGBA, non-interlaced: what Chromium writes) ----
function decodePng(buf) {
  assert.equal(buf.subarray(1, 4).toString('latin1'), 'PNG', 'not a PNG');
  let pos = 8, width = 0, height = 0, colourType = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.subarray(pos + 4, pos + 8).toString('latin1');
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0); height = data.readUInt32BE(4);
      assert.equal(data[8], 8, 'bit depth'); colourType = data[9];
      assert.equal(data[12], 0, 'interlaced PNG');
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    pos += 12 + len;
  }
  const bpp = colourType === 6 ? 4 : colourType === 2 ? 3 : 0;
  assert.ok(bpp, 'colour type ' + colourType);
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = width * bpp;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0, b = y ? out[(y - 1) * stride + x] : 0;
      const c = x >= bpp && y ? out[(y - 1) * stride + x - bpp] : 0;
      let v = line[x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) { const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      out[y * stride + x] = v & 255;
    }
  }
  return { width, height, bpp, pixels: out };
}

// Blank = one flat colour. A drawn plan has many colours and a good number
// of pixels in the role colours of the rectangles.
function checkNotBlank(file) {
  const { width, height, bpp, pixels } = decodePng(fs.readFileSync(file));
  const colours = new Map();
  for (let i = 0; i < pixels.length; i += bpp) {
    const key = (pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2];
    colours.set(key, (colours.get(key) || 0) + 1);
  }
  // Tensor fills are the role colours in three shades (x0.85, x1, x1.12).
  const near = (key, c, f) => [16, 8, 0].every(k =>
    Math.abs(((key >> k) & 255) - Math.min(255, Math.round(((c >> k) & 255) * f))) <= 2);
  const roleColours = [0x4e79a7, 0xf28e2b, 0x9c755f, 0xe15759, 0x59a14f];
  let role = 0;
  for (const [key, n] of colours)
    if (roleColours.some(c => [0.85, 1, 1.12].some(f => near(key, c, f)))) role += n;
  const total = width * height;
  assert.ok(colours.size > 16, `${file}: only ${colours.size} colours`);
  assert.ok(role > total * 0.02, `${file}: only ${role} of ${total} pixels in tensor colours`);
  return { colours: colours.size, rolePixels: role, total };
}

// ---- canvas pixels ----
// RGB of the canvas pixel under page point (x, y) (deviceScaleFactor 1).
async function pixel(page, canvas, x, y) {
  return page.evaluate(([id, px, py]) => {
    const c = document.getElementById(id), r = c.getBoundingClientRect();
    const d = c.getContext('2d').getImageData(Math.round(px - r.left), Math.round(py - r.top), 1, 1).data;
    return [d[0], d[1], d[2]];
  }, [canvas, x, y]);
}
const near = (a, b, tol) => a.every((v, k) => Math.abs(v - b[k]) <= tol);
const hex = h => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
const SELECT = hex('#ffb000'), PEAK = hex('#b0127a');
// Pixels of a canvas over a box (page coordinates, every `step` px).
async function canvasPixels(page, canvas, box, step = 3) {
  return page.evaluate(([id, b, s]) => {
    const c = document.getElementById(id), r = c.getBoundingClientRect(), ctx = c.getContext('2d');
    const out = [];
    for (let y = Math.ceil(b.y0); y <= b.y1; y += s)
      for (let x = Math.ceil(b.x0); x <= b.x1; x += s) {
        const d = ctx.getImageData(Math.round(x - r.left), Math.round(y - r.top), 1, 1).data;
        out.push([d[0], d[1], d[2]]);
      }
    return out;
  }, [canvas, box, step]);
}
const changed = (a, b) => a.filter((p, k) => !near(p, b[k], 6)).length;

// The number of steps that only produce constants, where run.sh made a page
// of that model: PP-OCRv4 det's ONNX Constant nodes, two_pools.json's two.
const FOLDED = { 'ch_PP-OCRv4_det_infer': { steps: 674, constant: 342 }, two_pools: { steps: 13, constant: 2 } };

const pages = DIR && fs.existsSync(DIR)
  ? fs.readdirSync(DIR).filter(f => f.endsWith('.html')).sort().map(f => path.join(DIR, f))
  : [];

test('viewer pages', { skip: pages.length ? false : 'set MEMPLAN_VIEWER_DIR (tests/browser/run.sh does)' },
  async t => {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'memplan-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: ARGS,
      viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
    let switchedPool = false, foldedPage = false;
    try {
      for (const file of pages) {
        await t.test(path.basename(file), async () => {
          const page = await context.newPage();
          const errors = [];
          page.on('pageerror', e => errors.push(String(e)));
          page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
          // Self-contained: any request other than the page itself fails the test.
          const requests = [];
          page.on('request', r => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
          await page.goto('file://' + file);
          await page.waitForFunction(() => window.memplanViewer && window.memplanViewer.rectCount() > 0);
          const V = (expr, ...a) => page.evaluate(expr, ...a);

          // Rectangles: at full view every tensor of the pool is drawn.
          const drawn = await V(() => memplanViewer.rectCount());
          const tensors = await V(() => memplanViewer.tensorCount());
          assert.ok(tensors > 0);
          assert.equal(drawn, tensors);

          // Hover the largest rectangle and read its tooltip.
          const c = await V(() => memplanViewer.rectCenter(0));
          assert.ok(c, 'no rectangle to hover');
          await page.mouse.move(c.x, c.y);
          await page.waitForFunction(() => memplanViewer.tooltipText() !== '');
          const tip = await V(() => memplanViewer.tooltipText());
          assert.ok(tip.startsWith(c.name + '\n'), `tooltip "${tip}" does not name ${c.name}`);
          assert.match(tip, /bytes \d/);
          assert.match(tip, /offset \d+ \.\. \d+/);
          assert.match(tip, /lifetime steps \d+\.\.\d+/);
          assert.ok(await page.isVisible('#tooltip'));

          // Pool tabs: each one selects its pool and draws it.
          const pools = await V(() => memplanViewer.pools());
          for (const id of pools.slice(1).concat(pools.slice(0, 1))) {
            await page.click('#pool-tab-' + id);
            assert.equal(await V(() => memplanViewer.currentPool()), id);
            assert.equal(await page.getAttribute('#pool-tab-' + id, 'aria-selected'), 'true');
            assert.ok(await V(() => memplanViewer.rectCount()) > 0);
            if (pools.length > 1) switchedPool = true;
          }

          // Zoom in on the layout: fewer steps in view, culled rectangles.
          const box = await page.locator('#layout-0').boundingBox();
          const before = await V(() => memplanViewer.view());
          await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
          await page.mouse.wheel(0, -1200);
          await page.waitForFunction(w => { const v = memplanViewer.view(); return v.x1 - v.x0 < w; },
            before.x1 - before.x0);
          const zoomed = await V(() => memplanViewer.view());
          assert.ok(zoomed.x1 - zoomed.x0 < (before.x1 - before.x0) * 0.5);
          assert.ok(await V(() => memplanViewer.rectCount()) <= tensors);
          // Pan: drag to the left moves the view to later steps.
          await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
          await page.mouse.down();
          await page.mouse.move(box.x + box.width / 2 - 150, box.y + box.height / 2, { steps: 5 });
          await page.mouse.up();
          const panned = await V(() => memplanViewer.view());
          assert.ok(panned.x0 > zoomed.x0, `pan did not move the view (${zoomed.x0} -> ${panned.x0})`);
          await page.dblclick('#layout-0');
          await page.waitForFunction(x => memplanViewer.view().x0 === x, before.x0);

          // Comparison panel, when the page has one.
          if (await V(() => memplanViewer.plans()) === 2)
            assert.ok(await V(() => memplanViewer.rectCount(1)) > 0, 'comparison panel is empty');

          // Control-flow bodies: a marker opens its body; the tab goes back.
          const markers = await V(() => memplanViewer.controlMarkers());
          if (markers.length) {
            const m = markers[0];
            await page.mouse.click(m.x, m.y);
            if (m.subgraphs.length > 1) await page.click('#cf-open-' + m.subgraphs[0]);
            assert.equal(await V(() => memplanViewer.currentGraph()), m.subgraphs[0]);
            assert.equal(await page.getAttribute('#graph-tab-' + m.subgraphs[0], 'aria-selected'), 'true');
            await page.click('#graph-tab-0');
            assert.equal(await V(() => memplanViewer.currentGraph()), 0);
          }

          // Search: a tensor of the last pool (of a body graph on
          // two_pools), typed into the box, Enter: its graph and pool open,
          // it is outlined and its lifetime lights up, in the layout and in
          // the live-bytes chart.
          const base = path.basename(file, '.html');
          await page.mouse.move(1, 1);
          let target;
          if (base === 'two_pools') target = 'else_tmp';
          else {
            await V(id => memplanViewer.selectPool(id), pools[pools.length - 1]);
            target = (await V(() => memplanViewer.rectCenter(0))).name;
            await V(id => memplanViewer.selectPool(id), pools[0]);
          }
          await page.fill('#search', target);
          assert.match(await page.textContent('#search-status'), /^\d+ match(es)?/);
          assert.ok(await page.isVisible('#search-result-0'));
          assert.ok((await page.textContent('#search-result-0')).startsWith(target + ' '));
          await page.press('#search', 'Enter');
          await V(() => memplanViewer.redraw());
          const sel = await V(() => memplanViewer.selected());
          assert.equal(sel.name, target);
          assert.equal(await V(() => memplanViewer.currentGraph()), sel.graph);
          assert.equal(await V(() => memplanViewer.currentPool()), sel.pool);
          if (base === 'two_pools') assert.equal(sel.graph, 2, 'else_tmp is in else_body');
          assert.ok(await page.isVisible('#selection'));
          assert.ok((await page.textContent('#selection')).includes(target));
          // Pixels: unselect, read, select, read again.
          const band = await V(() => memplanViewer.bandOf());
          const rect = await V(() => memplanViewer.rectOf());
          assert.ok(band && rect, 'selected tensor not drawn');
          const liveBox = await page.locator('#live-0').boundingBox();
          const bandLive = { x0: band.x0 + 1, x1: band.x1 - 1, y0: liveBox.y + 16, y1: liveBox.y + liveBox.height - 22 };
          const bandLayout = { x0: band.x0 + 1, x1: band.x1 - 1, y0: band.y0 + 1, y1: band.y1 - 1 };
          await V(() => { memplanViewer.clearSelection(); });
          const plainLayout = await canvasPixels(page, 'layout-0', bandLayout);
          const plainLive = await canvasPixels(page, 'live-0', bandLive);
          await page.press('#search', 'Enter');
          await V(() => memplanViewer.redraw());
          assert.equal((await V(() => memplanViewer.selected())).name, target);
          const litLayout = await canvasPixels(page, 'layout-0', bandLayout);
          const litLive = await canvasPixels(page, 'live-0', bandLive);
          assert.ok(changed(litLayout, plainLayout) > 0.9 * litLayout.length,
            `lifetime band: ${changed(litLayout, plainLayout)} of ${litLayout.length} layout pixels changed`);
          assert.ok(changed(litLive, plainLive) > 0.9 * litLive.length,
            `lifetime band: ${changed(litLive, plainLive)} of ${litLive.length} live-chart pixels changed`);
          // The outline: amber along the tensor's top edge (or bottom, when
          // the top is clipped by the view).
          const cx = (Math.max(rect.x0, band.x0) + Math.min(rect.x1, band.x1)) / 2;
          let outline = 0;
          for (const y of [rect.y0, rect.y1])
            for (let d = -2; d <= 2; d++)
              if (near(await pixel(page, 'layout-0', cx, y + d), SELECT, 40)) outline++;
          assert.ok(outline > 0, 'no outline in the selection colour around ' + target);
          // A name nothing has, then Escape.
          await page.fill('#search', 'no such tensor \u2603');
          assert.equal(await page.textContent('#search-status'), 'no tensor matches');
          assert.ok(!(await page.isVisible('#search-results')));
          await page.press('#search', 'Escape');
          assert.equal(await V(() => memplanViewer.selected()), null);
          assert.ok(!(await page.isVisible('#selection')));
          // A click on a tensor selects it too.
          await V(id => memplanViewer.selectGraph(id), 0);
          const hit = await V(() => memplanViewer.rectCenter(0));
          await page.mouse.click(hit.x, hit.y);
          assert.equal((await V(() => memplanViewer.selected())).name, hit.name);
          await page.mouse.move(1, 1);
          await V(() => { memplanViewer.clearSelection(); });

          // The peak: memplan's report says where it is and what is live
          // there; the viewer marks the same step and the same tensors.
          const report = JSON.parse(fs.readFileSync(file.replace(/\.html$/, '.report.json'), 'utf8'));
          for (const id of pools) {
            await V(q => memplanViewer.selectPool(q), id);
            const rp = report.pools.find(q => q.graph === 0 && q.mem_id === id);
            const pk = await V(() => memplanViewer.peak());
            assert.equal(pk.step, rp.peak.step, `pool ${id}: peak step`);
            assert.equal(pk.live, rp.peak.live_bytes, `pool ${id}: peak bytes`);
            assert.deepEqual(pk.tensors.slice(0, rp.peak.top_tensors.length), rp.peak.top_tensors.map(x => x.name));
            assert.ok((await page.textContent('#panel-0 .stats')).includes('peak at step ' + pk.step));
          }
          await V(q => memplanViewer.selectPool(q), pools[0]);
          const pk = await V(() => memplanViewer.peak());
          const layoutBox = await page.locator('#layout-0').boundingBox();
          const column = await canvasPixels(page, 'layout-0', { x0: pk.x - 1, x1: pk.x + 1, y0: layoutBox.y + 20, y1: layoutBox.y + layoutBox.height - 25 }, 1);
          assert.ok(column.filter(p => near(p, PEAK, 60)).length > 10, 'no peak line at step ' + pk.step);
          // "peak tensors": every other tensor fades, the live ones stay.
          await V(() => memplanViewer.redraw());
          const drawnNames = [];
          for (let k = 0; k < 12; k++) { const r = await V(j => memplanViewer.rectCenter(j), k); if (r) drawnNames.push(r); }
          const live = drawnNames.find(r => pk.tensors.includes(r.name));
          const other = drawnNames.find(r => !pk.tensors.includes(r.name));
          const shown = { live: live && await pixel(page, 'layout-0', live.x, live.y),
            other: other && await pixel(page, 'layout-0', other.x, other.y) };
          await page.click('#peak-toggle');
          assert.equal(await page.getAttribute('#peak-toggle', 'aria-pressed'), 'true');
          await page.mouse.move(1, 1);
          await V(() => memplanViewer.redraw());
          if (live) assert.ok(near(await pixel(page, 'layout-0', live.x, live.y), shown.live, 6), 'a peak tensor faded');
          if (other) {
            const faded = await pixel(page, 'layout-0', other.x, other.y);
            assert.ok(faded.reduce((a, b) => a + b) > shown.other.reduce((a, b) => a + b) + 120,
              `${other.name} not faded: ${shown.other} -> ${faded}`);
          }
          await page.click('#peak-toggle');
          assert.equal(await page.getAttribute('#peak-toggle', 'aria-pressed'), 'false');

          // Folding: steps that only produce constants take no width (a
          // toggle); every tensor is still drawn.
          await page.mouse.move(1, 1);
          const axis = await V(() => memplanViewer.axis());
          const expectFold = FOLDED[base];
          if (expectFold) {
            assert.equal(axis.steps, expectFold.steps);
            assert.equal(axis.constantSteps, expectFold.constant);
          }
          if (axis.constantSteps > 0) {
            foldedPage = true;
            assert.ok(await page.isVisible('#fold-label'));
            assert.equal((await page.textContent('#fold-label')).replace(/\s+/g, ' ').trim(),
              `fold the ${axis.constantSteps} steps that only produce constants`);
            assert.equal(axis.shown, axis.steps - axis.constantSteps);
            assert.equal(await V(() => memplanViewer.rectCount()), await V(() => memplanViewer.tensorCount()));
            // A tensor alive across folded steps is narrower folded.
            const across = await V(() => memplanViewer.spanningFolds());
            assert.ok(across >= 0, 'no tensor lives across folded steps');
            const folded = await V(i => memplanViewer.rectOf(0, i), across);
            await page.uncheck('#fold-constants');
            const unfolded = await V(i => memplanViewer.rectOf(0, i), across);
            assert.equal((await V(() => memplanViewer.axis())).shown, axis.steps);
            assert.equal(await V(() => memplanViewer.rectCount()), await V(() => memplanViewer.tensorCount()));
            assert.ok(folded.x1 - folded.x0 < unfolded.x1 - unfolded.x0,
              `folding did not narrow the tensor: ${folded.x1 - folded.x0} vs ${unfolded.x1 - unfolded.x0} px`);
            await page.check('#fold-constants');
            assert.equal((await V(() => memplanViewer.axis())).shown, axis.shown);
          } else {
            assert.ok(!(await page.isVisible('#fold-label')));
            assert.equal(axis.shown, axis.steps);
          }

          // Screenshot, not blank.
          await page.mouse.move(c.x, c.y);
          const shot = file.replace(/\.html$/, '.png');
          await page.screenshot({ path: shot, fullPage: true });
          const stats = checkNotBlank(shot);
          console.log(`# ${path.basename(file)}: ${tensors} tensors, pools [${pools}], ` +
            `${markers.length} control-flow markers, peak at step ${pk.step}, ` +
            `${axis.constantSteps} of ${axis.steps} steps folded, found '${target}', ` +
            `screenshot ${stats.colours} colours, ${stats.rolePixels}/${stats.total} tensor pixels`);

          assert.deepEqual(errors, [], 'page errors');
          assert.deepEqual(requests, [], 'network requests');
          await page.close();
        });
      }
      assert.ok(switchedPool || process.env.MEMPLAN_VIEWER_ONE_POOL_OK,
        'no page had two pools to switch between');
      assert.ok(foldedPage, 'no page had steps to fold');
    } finally {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    }
  });
