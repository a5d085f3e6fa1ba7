import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as browser from '../src/index.browser.ts';

const src = path.join(path.dirname(fileURLToPath(import.meta.url)), '../src');

/** Follows relative imports from `entry` and collects every module specifier reached. */
function moduleGraph(entry: string): { files: Set<string>; specifiers: Set<string> } {
  const files = new Set<string>();
  const specifiers = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/g)) {
      const spec = m[1]!;
      if (/^import\s+type\b/.test(m[0])) continue;
      specifiers.add(spec);
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec));
    }
  };
  visit(path.join(src, entry));
  return { files, specifiers };
}

describe('entries', () => {
  it('the browser entry reaches no Node-only module', () => {
    const { files, specifiers } = moduleGraph('index.browser.ts');
    expect([...specifiers].filter((s) => !s.startsWith('.'))).toEqual([]);
    expect([...files].some((f) => f.endsWith('ambient.node.ts'))).toBe(false);
    expect([...files].some((f) => f.endsWith('realtime.node.ts'))).toBe(false);
    for (const file of files) expect(readFileSync(file, 'utf8')).not.toMatch(/import\(\s*['"]ws['"]/);
  });

  it('the node entry falls back to ws for realtime, loaded only when needed', () => {
    const { files } = moduleGraph('index.node.ts');
    const fallback = [...files].find((f) => f.endsWith('realtime.node.ts'));
    expect(fallback).toBeDefined();
    expect(readFileSync(fallback!, 'utf8')).toMatch(/await import\('ws'\)/);
  });

  it('the node entry uses AsyncLocalStorage', () => {
    const { specifiers } = moduleGraph('index.node.ts');
    expect(specifiers.has('node:async_hooks')).toBe(true);
  });

  it('package.json selects the entries by condition', () => {
    const pkg = JSON.parse(readFileSync(path.join(src, '../package.json'), 'utf8'));
    const root = pkg.exports['.'];
    expect(root.browser.import).toBe('./src/index.browser.ts');
    expect(root.node.import).toBe('./src/index.node.ts');
    expect(root.default.import).toBe('./src/index.browser.ts');
    // One runtime dependency, for the Node entry's realtime on runtimes without a global WebSocket.
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(['ws']);
    expect(pkg.sideEffects).toContain('./src/realtime.node.ts');
  });

  it('the browser fallback keeps a scope during sync code and until its promise settles', async () => {
    expect(browser.withSession('r:sync', () => browser.currentSessionToken())).toBe('r:sync');
    const seen = await browser.withSession('r:async', async () => {
      await Promise.resolve();
      return browser.currentSessionToken();
    });
    expect(seen).toBe('r:async');
    expect(browser.currentSessionToken()).toBeUndefined();
  });

  it('resolves the package by name', async () => {
    const mod = await import('@bds/client');
    expect(typeof mod.createClient).toBe('function');
  });
});
