import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runTransfer } from '../../src/cli.ts';
import { INCUMBENT_KEYS, incumbentUnavailable, startIncumbent } from './incumbent.ts';

/** runTransfer in-process, with what it printed. */
async function transfer(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  try {
    const code = await runTransfer(args, {});
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'bds-from-parse-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const unavailable = await incumbentUnavailable();
const KEY_FLAGS = ['--parse-app-id', 'app', '--parse-master-key', 'key'];

describe('import --from-parse: the command line', () => {
  it('refuses bad combinations of flags with exit code 2, before a store is opened', async () => {
    const dataDir = path.join(dir, 'untouched');
    const cases: Array<[string[], string]> = [
      [
        ['import', '--from-parse', 'http://x/parse'],
        'import --from-parse needs --parse-app-id and --parse-master-key.',
      ],
      [
        ['import', '--from-parse', 'x/parse', ...KEY_FLAGS],
        '--from-parse needs the http(s) URL of parse-server.',
      ],
      [
        ['import', '--from-parse', 'http://x/parse', '--in', 'f', ...KEY_FLAGS],
        '--from-parse is an import, without --in, --out or --sessions.',
      ],
      [
        ['export', '--from-parse', 'http://x/parse', ...KEY_FLAGS],
        '--from-parse is an import, without --in, --out or --sessions.',
      ],
      [['import', '--in', 'f', '--parse-users', 'u.json'], '--parse-users goes with import --from-parse.'],
      [['import', '--in', 'f', '--parse-sessions'], '--parse-sessions goes with import --from-parse.'],
      [
        [
          'import',
          '--from-parse',
          'http://x/parse',
          ...KEY_FLAGS,
          '--parse-users',
          'u',
          '--parse-postgres',
          'postgres://x',
        ],
        'give --parse-postgres or --parse-users, not both.',
      ],
    ];
    for (const [args, message] of cases) {
      const { code, err } = await transfer([...args, '--data-dir', dataDir]);
      expect(code, args.join(' ')).toBe(2);
      expect(err, args.join(' ')).toContain(`[bds] ${message}`);
      expect(err).toContain('usage: npm run server -- export');
    }
    const missing = await transfer([
      'import',
      '--from-parse',
      'http://x/parse',
      ...KEY_FLAGS,
      '--parse-users',
      path.join(dir, 'none.json'),
      '--data-dir',
      dataDir,
    ]);
    expect(missing.code).toBe(3);
    expect(missing.err).toContain(`[bds] import failed: cannot read ${path.join(dir, 'none.json')}`);
  });

  it('an incumbent that cannot be reached fails with exit code 1 and says where', async () => {
    const { code, err } = await transfer([
      'import',
      '--from-parse',
      'http://127.0.0.1:9/parse',
      ...KEY_FLAGS,
      '--data-dir',
      path.join(dir, 'unreachable'),
    ]);
    expect(code).toBe(1);
    expect(err).toContain('[bds] import failed: cannot reach parse-server at http://127.0.0.1:9/parse');
  });

  it.skipIf(unavailable !== undefined)(
    'imports a running parse-server into a data dir, with a line per class and a summary',
    async () => {
      const incumbent = await startIncumbent();
      try {
        const args = [
          'import',
          '--from-parse',
          incumbent.url,
          '--parse-app-id',
          INCUMBENT_KEYS.appId,
          '--parse-master-key',
          INCUMBENT_KEYS.masterKey,
          '--parse-postgres',
          incumbent.databaseURI,
          '--data-dir',
          path.join(dir, 'target'),
        ];
        const first = await transfer(args);
        expect(first.err).toBe('');
        expect(first.code).toBe(0);
        expect(first.out).toContain('[bds] _User: 0 rows');
        expect(first.out).toContain(
          '[bds] imported from parse-server (a full import): 2 classes, 0 rows, 0 relation members, 0 files and 0 password hashes',
        );
        const second = await transfer([...args, '--parse-sessions']);
        expect(second.code).toBe(0);
        expect(second.out).toMatch(/\(changes since \d{4}-\d\d-\d\dT[\d:.]+Z\): 2 classes, 0 rows/);
        expect(second.out).toContain(
          '0 files and 0 password hashes, 0 sessions; 0 rows deleted here, gone there',
        );
      } finally {
        await incumbent.stop();
      }
    },
    60_000,
  );
});
