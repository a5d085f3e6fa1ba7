/**
 * Sizes of the built console (web/dist), gzipped. The initial JavaScript is the entry chunk plus
 * everything it imports statically (walked through Vite's manifest); lazy route chunks are listed
 * apart. `npm run build` prints this table; web/test/bundle-budget.test.ts enforces the budget.
 *
 *   node --import tsx web/scripts/bundle-size.ts [distDir]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const WEB_DIST = fileURLToPath(new URL('../dist', import.meta.url));
/** Initial JavaScript budget, gzipped bytes (the incumbent dashboard ships about 1.4 MB). */
export const INITIAL_JS_BUDGET = 250_000;

interface ManifestChunk {
  file: string;
  isEntry?: boolean;
  imports?: string[];
  dynamicImports?: string[];
  css?: string[];
}

export interface AssetSize {
  file: string;
  bytes: number;
  gzip: number;
  initial: boolean;
}

export interface BundleReport {
  assets: AssetSize[];
  initialJs: { files: string[]; bytes: number; gzip: number };
  initialCss: { files: string[]; gzip: number };
  totalJsGzip: number;
}

function walk(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name.startsWith('.')) return [];
    return statSync(full).isDirectory() ? walk(full, base) : [path.relative(base, full)];
  });
}

export function measureBundle(dist = WEB_DIST): BundleReport {
  const manifest = JSON.parse(readFileSync(path.join(dist, '.vite', 'manifest.json'), 'utf8')) as Record<
    string,
    ManifestChunk
  >;
  const initial = new Set<string>();
  const initialCss = new Set<string>();
  const visit = (key: string) => {
    const chunk = manifest[key];
    if (!chunk || initial.has(chunk.file)) return;
    initial.add(chunk.file);
    for (const css of chunk.css ?? []) initialCss.add(css);
    for (const imp of chunk.imports ?? []) visit(imp);
  };
  const entries = Object.entries(manifest).filter(([, c]) => c.isEntry);
  if (entries.length === 0) throw new Error(`no entry chunk in ${dist}/.vite/manifest.json`);
  for (const [key] of entries) visit(key);
  // Plus whatever index.html itself loads (classic scripts such as theme-init.js, preloads).
  const html = readFileSync(path.join(dist, 'index.html'), 'utf8');
  for (const m of html.matchAll(
    /<(?:script[^>]*\ssrc|link[^>]*rel="(?:modulepreload|stylesheet)"[^>]*\shref)="\/([^"]+)"/g,
  )) {
    const file = m[1]!;
    if (file.endsWith('.css')) initialCss.add(file);
    else initial.add(file);
  }

  const assets = walk(dist)
    .filter((f) => /\.(js|css|html|svg)$/.test(f))
    .map((file) => {
      const buf = readFileSync(path.join(dist, file));
      return {
        file,
        bytes: buf.length,
        gzip: gzipSync(buf, { level: 9 }).length,
        initial: initial.has(file) || initialCss.has(file),
      };
    })
    .sort((a, b) => Number(b.initial) - Number(a.initial) || b.gzip - a.gzip);
  const initialJs = assets.filter((a) => a.file.endsWith('.js') && initial.has(a.file));
  return {
    assets,
    initialJs: {
      files: initialJs.map((a) => a.file),
      bytes: initialJs.reduce((s, a) => s + a.bytes, 0),
      gzip: initialJs.reduce((s, a) => s + a.gzip, 0),
    },
    initialCss: {
      files: [...initialCss],
      gzip: assets.filter((a) => initialCss.has(a.file)).reduce((s, a) => s + a.gzip, 0),
    },
    totalJsGzip: assets.filter((a) => a.file.endsWith('.js')).reduce((s, a) => s + a.gzip, 0),
  };
}

const kb = (n: number) => `${(n / 1000).toFixed(1)} kB`;

export function formatReport(r: BundleReport): string {
  const width = Math.max(...r.assets.map((a) => a.file.length), 10);
  const lines = ['', 'Console bundle (gzipped):', ''];
  for (const a of r.assets) {
    lines.push(
      `  ${a.initial ? '*' : ' '} ${a.file.padEnd(width)}  ${kb(a.bytes).padStart(10)}  gzip ${kb(a.gzip).padStart(9)}`,
    );
  }
  lines.push('', '  * loaded on first page view; the rest are lazy route chunks', '');
  const pct = ((r.initialJs.gzip / INITIAL_JS_BUDGET) * 100).toFixed(0);
  lines.push(
    `  initial JavaScript: ${kb(r.initialJs.gzip)} gzipped (${r.initialJs.files.length} files, budget ${kb(INITIAL_JS_BUDGET)}, ${pct}% used)`,
    `  initial CSS:        ${kb(r.initialCss.gzip)} gzipped`,
    `  all JavaScript:     ${kb(r.totalJsGzip)} gzipped`,
    '',
  );
  return lines.join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const report = measureBundle(process.argv[2] ?? WEB_DIST);
  console.log(formatReport(report));
  if (report.initialJs.gzip > INITIAL_JS_BUDGET) {
    console.error(`initial JavaScript exceeds the ${kb(INITIAL_JS_BUDGET)} budget`);
    process.exitCode = 1;
  }
}
