import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAppRegistry } from '../src/apps.ts';
import { loadBffOptions, OptionError, validateBffOptions } from '../src/options.ts';
import { resolveSessionSecret, SESSION_SECRET_FILE } from '../src/session.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(path.join(tmpdir(), 'bds-bff-options-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const app = { id: 'a1', serverURL: 'http://localhost:1337/api', appId: 'app', masterKey: 'master-key-123' };
const HASH = 'scrypt$32768$8$1$c2FsdA$aGFzaA';

describe('bff options', () => {
  it('applies defaults', () => {
    const o = validateBffOptions({ apps: [app] });
    expect(o).toMatchObject({ port: 4040, host: '127.0.0.1', dataDir: './data', consoleUsers: [] });
    expect(o.idleTimeoutSeconds).toBe(1800);
    expect(o.absoluteTimeoutSeconds).toBe(43200);
    expect(o.loginThrottle).toEqual({ freeAttempts: 5, baseDelaySeconds: 1, maxDelaySeconds: 900 });
  });

  it.each([
    [{ apps: [] }, 'apps'],
    [{}, 'apps'],
    [{ apps: [{ ...app, serverURL: 'ftp://x' }] }, 'apps.0.serverURL'],
    [{ apps: [{ ...app, masterKey: 'short' }] }, 'apps.0.masterKey'],
    [{ apps: [app, app] }, 'apps.1.id'],
    [{ apps: [app], port: 'abc' }, 'port'],
    [{ apps: [app], sessionSecret: 'too short' }, 'sessionSecret'],
    [{ apps: [app], colour: 'blue' }, 'colour'],
    [
      { apps: [app], consoleUsers: [{ username: 'x', passwordHash: 'plain', role: 'admin' }] },
      'consoleUsers.0.passwordHash',
    ],
    [
      { apps: [app], consoleUsers: [{ username: 'x', passwordHash: HASH, role: 'root' }] },
      'consoleUsers.0.role',
    ],
    [
      { apps: [app], consoleUsers: [{ username: 'x', passwordHash: HASH, role: 'admin', apps: ['zz'] }] },
      'consoleUsers.0.apps.0',
    ],
    [{ apps: [app], idleTimeoutSeconds: 100, absoluteTimeoutSeconds: 50 }, 'absoluteTimeoutSeconds'],
  ])('names the bad option %#', (input, name) => {
    expect(() => validateBffOptions(input)).toThrow(OptionError);
    try {
      validateBffOptions(input);
    } catch (err) {
      expect((err as OptionError).option).toBe(name);
      expect((err as Error).message).toMatch(new RegExp(`^option "${name.replace(/\./g, '\\.')}": `));
    }
  });

  it('loads one app from env and several from BDS_CONSOLE_CONFIG', () => {
    const fromEnv = loadBffOptions({
      BDS_CONSOLE_PORT: '4100',
      BDS_DATA_DIR: tmp,
      BDS_SERVER_URL: 'http://svc:1337/api',
      BDS_APP_ID: 'env-app',
      BDS_MASTER_KEY: 'env-master-key',
      BDS_REST_API_KEY: 'env-rest-key',
    });
    expect(fromEnv.port).toBe(4100);
    expect(fromEnv.dataDir).toBe(tmp);
    expect(fromEnv.apps).toEqual([
      {
        id: 'env-app',
        serverURL: 'http://svc:1337/api',
        appId: 'env-app',
        masterKey: 'env-master-key',
        restAPIKey: 'env-rest-key',
        parseSources: [],
      },
    ]);
    const file = path.join(tmp, 'console.json');
    writeFileSync(
      file,
      JSON.stringify({
        apps: [app, { ...app, id: 'a2', name: 'Second' }],
        consoleUsers: [{ username: 'ann', passwordHash: HASH, role: 'read-only', apps: ['a2'] }],
      }),
    );
    const fromFile = loadBffOptions({ BDS_CONSOLE_CONFIG: file });
    expect(fromFile.apps.map((a) => a.id)).toEqual(['a1', 'a2']);
    expect(fromFile.consoleUsers[0]).toMatchObject({ username: 'ann', role: 'read-only', apps: ['a2'] });
    writeFileSync(file, '{nope');
    expect(() => loadBffOptions({ BDS_CONSOLE_CONFIG: file })).toThrow(
      /option "BDS_CONSOLE_CONFIG".*not valid JSON/,
    );
  });

  it('the CLI exits 2 with a message naming a bad option', () => {
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'bff/src/cli.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        BDS_CONSOLE_CONFIG: '',
        BDS_SERVER_URL: 'not a url',
        BDS_APP_ID: 'x',
        BDS_MASTER_KEY: 'k',
      },
      encoding: 'utf8',
    });
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/option "apps\.0\.serverURL"/);
  });

  it('generates the session secret once, with mode 0600', () => {
    const dataDir = path.join(tmp, 'secret');
    const first = resolveSessionSecret({ dataDir });
    expect(first.length).toBeGreaterThanOrEqual(32);
    const file = path.join(dataDir, SESSION_SECRET_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(resolveSessionSecret({ dataDir })).toBe(first);
    expect(readFileSync(file, 'utf8').trim()).toBe(first);
    expect(resolveSessionSecret({ dataDir, sessionSecret: 'x'.repeat(32) })).toBe('x'.repeat(32));
  });

  it('the app registry lists apps without keys and knows every secret', () => {
    const registry = createAppRegistry(
      validateBffOptions({
        apps: [{ ...app, name: 'One', restAPIKey: 'rest-key-1', webhookKey: 'hook-key-1' }],
      }).apps,
    );
    expect(registry.list()).toEqual([{ id: 'a1', name: 'One', serverURL: 'http://localhost:1337/api' }]);
    expect(JSON.stringify(registry.list())).not.toContain('master-key-123');
    expect(registry.has('a1')).toBe(true);
    expect(registry.has('nope')).toBe(false);
    expect(registry.secrets().sort()).toEqual(['hook-key-1', 'master-key-123', 'rest-key-1']);
    expect(() => registry.clientFor('nope')).toThrow();
    expect(registry.clientFor('a1')).toBeDefined();
  });

  it('parse-server import sources: checked at start, kept per app, their keys counted as secrets', () => {
    const source = {
      name: 'old',
      serverURL: 'http://old:1337/parse',
      appId: 'old',
      masterKey: 'old-master-1',
    };
    expect(() =>
      validateBffOptions({ apps: [{ ...app, parseSources: [{ ...source, serverURL: 'ftp://old/parse' }] }] }),
    ).toThrow('option "apps.0.parseSources.0.serverURL": must be an http(s) URL');
    expect(() => validateBffOptions({ apps: [{ ...app, parseSources: [source, source] }] })).toThrow(
      'option "apps.0.parseSources.1.name": is a duplicate',
    );
    expect(() =>
      validateBffOptions({ apps: [{ ...app, parseSources: [{ ...source, name: 'a b' }] }] }),
    ).toThrow('option "apps.0.parseSources.0.name": must be 1-64 letters, digits, "_" or "-"');
    const withDb = { ...source, name: 'db', postgresURL: 'postgres://u:pw-4411@db/parse' };
    const registry = createAppRegistry(
      validateBffOptions({ apps: [{ ...app, parseSources: [source, withDb] }] }).apps,
    );
    expect(registry.parseSources('a1')).toEqual([source, withDb]);
    expect(registry.parseSources('nope')).toEqual([]);
    expect(JSON.stringify(registry.list())).not.toContain('old-master-1');
    expect(registry.secrets().sort()).toEqual([
      'master-key-123',
      'old-master-1',
      'postgres://u:pw-4411@db/parse',
    ]);
  });
});
