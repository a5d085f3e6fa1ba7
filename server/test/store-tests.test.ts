import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { storeTests } from '../../scripts/store-tests.ts';

/** The PostgreSQL run (scripts/test-pg.ts) takes the test files that can reach a store. */
describe('the test files of the PostgreSQL run', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A project of `files` (path to text) in a temporary folder. */
  function project(files: Record<string, string>): string {
    const root = mkdtempSync(path.join(tmpdir(), 'bds-store-tests-'));
    dirs.push(root);
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
      writeFileSync(path.join(root, name), text);
    }
    return root;
  }

  it('takes files that reach the test service at any depth, and those that read the database URL', () => {
    const root = project({
      'server/test/helpers/service.ts': 'export const startService = 1;',
      'server/test/helpers/world.ts': "import { startService } from './service.ts';",
      'server/test/direct.test.ts': "import { startService } from './helpers/service.ts';",
      'server/test/deep/through-helper.test.ts': "import { x } from '../helpers/world.ts';",
      'server/test/dynamic.test.ts': "const m = await import('./helpers/world.ts');",
      'server/test/helpers/keys.ts': 'export const KEYS = 1;',
      'server/test/own-service.test.ts':
        "import { createService } from '../src/index.ts';\nimport { KEYS } from './helpers/keys.ts';",
      'server/src/index.ts': "import { openStorage } from './storage/open.ts';",
      'server/src/storage/open.ts': '',
      'server/test/url.test.ts': 'const url = process.env.BDS_TEST_DATABASE_URL;',
      'server/test/pure.test.ts': "import { parse } from '../src/query/parse.ts';",
      'server/src/query/parse.ts': "import { a } from './a.ts';",
      'server/src/query/a.ts': "import { parse } from './parse.ts';",
      'server/test/child.test.ts': "import { spawnCli } from './helpers/child.ts';",
      'server/test/helpers/child.ts': "import { spawn } from 'node:child_process';",
    });
    expect(storeTests(root)).toEqual([
      'server/test/deep/through-helper.test.ts',
      'server/test/direct.test.ts',
      'server/test/dynamic.test.ts',
      'server/test/url.test.ts',
    ]);
  });

  it('in this project: the integration suites are in; the CLI, services on SQLite, the layer lint and pure functions are out', () => {
    const chosen = storeTests(fileURLToPath(new URL('../..', import.meta.url)));
    expect(chosen).toEqual(
      expect.arrayContaining(['server/test/records.test.ts', 'server/test/batch.test.ts']),
    );
    for (const out of [
      'server/test/cli.test.ts',
      'server/test/layers.test.ts',
      'server/test/query-parse.test.ts',
    ])
      expect(chosen).not.toContain(out);
  });
});
