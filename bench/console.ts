/**
 * `npm run bench -- console`: the console's performance budget in Chromium (issue 6).
 *
 * Starts the product in this process (service + bff + built SPA on temporary ports and a temporary
 * data dir, the e2e harness), seeds a class of BENCH_CONSOLE_ROWS rows (default 1,000,000) through
 * the store, drives /usr/bin/chromium and measures with the Performance API in the page:
 *   - navigation to first rows visible (the first grid row in the DOM, then the next frame): < 500 ms
 *   - cell double-click (event timeStamp) to editor visible (next frame after it mounts): < 50 ms
 *   - scroll frames: per-frame main-thread time while the grid scrolls (scrollTop += 100 px per
 *     animation frame; a frame's time runs from its rAF callback to a task posted from it, i.e.
 *     scroll handling, React render, style, layout and paint): p95 < 16 ms
 * BENCH_NO_BUILD=1 skips the `vite build` that runs first; BENCH_TRACE=<file.json> records a
 * Chromium performance trace of the scrolling (open it in DevTools' Performance panel).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { seedRows } from '../e2e/data-browser-seed.ts';
import { launchBrowser, login, openSession } from '../e2e/helpers/browser.ts';
import { ROOT, startProduct } from '../e2e/helpers/product.ts';

const ROWS = Number(process.env.BENCH_CONSOLE_ROWS ?? 1_000_000);
const CLASS = 'BenchRow';
const TAGS = ['red', 'green', 'blue', 'cyan'];

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

/** Installed in every page: records when the first grid row and each cell editor become visible. */
const PAGE_PROBE = `(() => {
  window.__editorTimes = [];
  let dbl = 0;
  document.addEventListener('dblclick', (e) => (dbl = e.timeStamp), true);
  let editorOpen = false;
  new MutationObserver(() => {
    if (window.__firstRowsDom === undefined && document.querySelector('[data-testid="grid"] [data-row-id]')) {
      window.__firstRowsDom = performance.now();
      requestAnimationFrame(() => (window.__firstRows = performance.now()));
    }
    const editor = !!document.querySelector('[data-testid="cell-editor"]');
    if (editor && !editorOpen && dbl) {
      const start = dbl;
      requestAnimationFrame(() => window.__editorTimes.push(performance.now() - start));
    }
    editorOpen = editor;
  }).observe(document, { childList: true, subtree: true });
})()`;

/** Scrolls the grid by `step` px per animation frame for `frames` frames; per-frame times. */
const SCROLL = (frames: number, step: number, from: 'top' | 'middle') => `new Promise((resolve) => {
  const el = document.querySelector('[data-testid="grid"]');
  el.scrollTop = ${from === 'top' ? '0' : 'el.scrollHeight / 2'};
  const work = [];
  const interval = [];
  let last = 0;
  let n = 0;
  let start = 0;
  const ch = new MessageChannel();
  ch.port1.onmessage = () => work.push(performance.now() - start);
  const frame = (ts) => {
    start = performance.now();
    if (last) interval.push(ts - last);
    last = ts;
    el.scrollTop += ${step};
    ch.port2.postMessage(0);
    if (++n < ${frames}) requestAnimationFrame(frame);
    else setTimeout(() => resolve({ work, interval, placeholders: el.querySelectorAll('[data-placeholder]').length }), 1000);
  };
  requestAnimationFrame(frame);
})`;

interface ScrollResult {
  work: number[];
  interval: number[];
  placeholders: number;
}

async function main(): Promise<void> {
  if (!process.env.BENCH_NO_BUILD) {
    console.log('bench console: building the SPA...');
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'],
      {
        cwd: path.join(ROOT, 'web'),
        stdio: 'inherit',
      },
    );
  }
  const product = await startProduct();
  const browser = await launchBrowser();
  try {
    const res = await product.rest('POST', `/schemas/${CLASS}`, {
      className: CLASS,
      fields: {
        n: { type: 'Number' },
        name: { type: 'String' },
        tags: { type: 'Array' },
        done: { type: 'Boolean' },
      },
      indexes: { n_1: { n: 1 } },
    });
    if (res.status !== 200) throw new Error(`create ${CLASS}: ${res.status} ${JSON.stringify(res.json)}`);
    console.log(`bench console: seeding ${ROWS.toLocaleString('en')} rows of ${CLASS}...`);
    const t0 = performance.now();
    await seedRows(product.service, CLASS, ROWS, (i) => ({
      n: (i * 7919) % 1_000_003,
      name: `row ${i}`,
      tags: [TAGS[i % 4], TAGS[(i * 3) % 4]],
      done: i % 3 === 0,
    }));
    console.log(`bench console: seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // The probes are strings (no DOM types here); the console's CSP forbids eval, so bypass it.
    const session = await openSession(browser, product, { bypassCSP: true });
    const { page } = session;
    await page.addInitScript({ content: PAGE_PROBE });
    await login(page);
    const url = `/apps/${product.appId}/data/${CLASS}`;

    // Navigation to first rows: the first visit (cold: SPA chunks, schemas) and four more.
    const firstRows: number[] = [];
    for (let k = 0; k < 5; k++) {
      await page.goto(k % 2 ? `/apps/${product.appId}/config` : '/');
      await page.goto(url);
      await page.waitForFunction('window.__firstRows !== undefined', undefined, {
        timeout: 30_000,
      });
      firstRows.push(await page.evaluate<number>('window.__firstRows'));
    }
    const grid = page.getByTestId('grid');
    const total = Number(await grid.getAttribute('data-total'));

    // Cell click to editor: double-click (then Escape) on cells of different types.
    const fields = ['name', 'n', 'done', 'tags', 'name', 'n', 'done', 'tags', 'name', 'n'];
    for (const [i, f] of fields.entries()) {
      const cell = page.locator(`[data-index="${i + 2}"] [data-field="${f}"]`);
      await cell.dblclick();
      await page.getByTestId('cell-editor').waitFor();
      await page.keyboard.press('Escape');
      await page.getByTestId('cell-editor').waitFor({ state: 'detached' });
    }
    const editor = await page.evaluate<number[]>('window.__editorTimes');

    // Scroll frames: 300 frames at 100 px each, twice (from the top, then from the middle).
    const scroll = (from: 'top' | 'middle') => page.evaluate<ScrollResult>(SCROLL(300, 100, from));
    await page.waitForTimeout(300);
    // BENCH_TRACE=<file.json>: a Chromium performance trace of the scrolling, for DevTools.
    const trace = process.env.BENCH_TRACE;
    if (trace) await browser.startTracing(page, { path: trace, screenshots: false });
    const top = await scroll('top');
    const mid = await scroll('middle');
    if (trace) await browser.stopTracing();
    const work = [...top.work, ...mid.work];
    const interval = [...top.interval, ...mid.interval];
    await session.screenshot('bench-console-scroll');
    await session.close();

    const first = firstRows[0]!;
    const warm = firstRows.slice(1);
    const rows = [
      ['rows in the class (grid total)', total.toLocaleString('en'), ''],
      ['first rows visible, first visit', ms(first), first < 500 ? 'ok (< 500 ms)' : 'OVER 500 ms'],
      [
        'first rows visible, next visits (median / max)',
        `${ms(pct(warm, 50))} / ${ms(Math.max(...warm))}`,
        Math.max(...warm) < 500 ? 'ok (< 500 ms)' : 'OVER 500 ms',
      ],
      [
        `cell click to editor (median / p95 / max of ${editor.length})`,
        `${ms(pct(editor, 50))} / ${ms(pct(editor, 95))} / ${ms(Math.max(...editor))}`,
        Math.max(...editor) < 50 ? 'ok (< 50 ms)' : pct(editor, 95) < 50 ? 'p95 ok (< 50 ms)' : 'OVER 50 ms',
      ],
      [
        `scroll frame time p50 / p95 / max (${work.length} frames)`,
        `${ms(pct(work, 50))} / ${ms(pct(work, 95))} / ${ms(Math.max(...work))}`,
        pct(work, 95) < 16 ? 'ok (< 16 ms)' : 'OVER 16 ms',
      ],
      [
        'scroll frame interval p50 / p95 (rAF to rAF)',
        `${ms(pct(interval, 50))} / ${ms(pct(interval, 95))}`,
        '',
      ],
      ['placeholders left 1 s after scrolling', String(top.placeholders + mid.placeholders), ''],
    ];
    console.log(`\nconsole bench (Chromium ${browser.version()}, ${ROWS.toLocaleString('en')} rows)\n`);
    const w0 = Math.max(...rows.map((r) => r[0]!.length));
    const w1 = Math.max(...rows.map((r) => r[1]!.length));
    for (const [a, b, c] of rows) console.log(`  ${a!.padEnd(w0)}  ${b!.padStart(w1)}  ${c}`);
  } finally {
    await browser.close();
    await product.close();
  }
}

await main().catch((err) => {
  console.error('\nbench console failed:', err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
