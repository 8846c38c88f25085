// Browser test of the memplan HTML viewer: drives the system Chromium with
// playwright-core over every page in MEMPLAN_VIEWER_DIR (written by run.sh):
// rectangles drawn, tooltip on hover, pool and graph tabs, zoom and pan,
// the comparison panel, and a screenshot that must not be blank.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';

/* global window, memplanViewer -- page.evaluate() callbacks run in the page */

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

const pages = DIR && fs.existsSync(DIR)
  ? fs.readdirSync(DIR).filter(f => f.endsWith('.html')).sort().map(f => path.join(DIR, f))
  : [];

test('viewer pages', { skip: pages.length ? false : 'set MEMPLAN_VIEWER_DIR (tests/browser/run.sh does)' },
  async t => {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'memplan-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: ARGS,
      viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
    let switchedPool = false;
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

          // Screenshot, not blank.
          await page.mouse.move(c.x, c.y);
          const shot = file.replace(/\.html$/, '.png');
          await page.screenshot({ path: shot, fullPage: true });
          const stats = checkNotBlank(shot);
          console.log(`# ${path.basename(file)}: ${tensors} tensors, pools [${pools}], ` +
            `${markers.length} control-flow markers, screenshot ${stats.colours} colours, ` +
            `${stats.rolePixels}/${stats.total} tensor pixels`);

          assert.deepEqual(errors, [], 'page errors');
          assert.deepEqual(requests, [], 'network requests');
          await page.close();
        });
      }
      assert.ok(switchedPool || process.env.MEMPLAN_VIEWER_ONE_POOL_OK,
        'no page had two pools to switch between');
    } finally {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    }
  });
