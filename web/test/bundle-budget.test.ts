import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatReport, INITIAL_JS_BUDGET, measureBundle, WEB_DIST } from '../scripts/bundle-size.ts';

const WEB = fileURLToPath(new URL('..', import.meta.url));

/** `npm test` builds first; run alone, this builds the SPA when there is no build yet. */
function ensureBuilt(): void {
  if (existsSync(path.join(WEB_DIST, '.vite', 'manifest.json'))) return;
  execFileSync(
    process.execPath,
    [path.join(WEB, '../node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'],
    {
      cwd: WEB,
      stdio: 'inherit',
    },
  );
}

describe('console bundle', () => {
  it(`keeps the initial JavaScript under ${INITIAL_JS_BUDGET / 1000} kB gzipped`, {
    timeout: 120_000,
  }, () => {
    ensureBuilt();
    const report = measureBundle();
    console.log(formatReport(report));
    expect(report.initialJs.files.length).toBeGreaterThan(0);
    expect(report.initialJs.gzip).toBeLessThanOrEqual(INITIAL_JS_BUDGET);
  });

  it('splits routes: the data browser and config sections are lazy chunks', () => {
    ensureBuilt();
    const report = measureBundle();
    const lazy = report.assets.filter((a) => !a.initial).map((a) => a.file);
    expect(lazy.some((f) => /data-browser-route-.*\.js$/.test(f))).toBe(true);
    expect(lazy.some((f) => /config-route-.*\.js$/.test(f))).toBe(true);
  });

  it('loads the chart library (uPlot) with the analytics page only', () => {
    ensureBuilt();
    const report = measureBundle();
    const text = (file: string) => readFileSync(path.join(WEB_DIST, file), 'utf8');
    const withUplot = report.assets.filter(
      (a) => a.file.endsWith('.js') && /uPlot|u-legend/.test(text(a.file)),
    );
    expect(withUplot.length).toBeGreaterThan(0);
    expect(withUplot.filter((a) => a.initial)).toEqual([]);
    expect(report.assets.some((a) => !a.initial && /analytics-route-.*\.js$/.test(a.file))).toBe(true);
  });

  it('has no inline script in index.html (the CSP is script-src self)', () => {
    ensureBuilt();
    const html = readFileSync(path.join(WEB_DIST, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(attrs).toMatch(/\ssrc="/);
      expect(body!.trim()).toBe('');
    }
    expect(html).not.toMatch(/\son[a-z]+="/i);
    expect(html).not.toMatch(/\sstyle="/i);
  });

  it('ships no source maps', () => {
    ensureBuilt();
    const files = readdirSync(path.join(WEB_DIST, 'assets'));
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
  });
});
