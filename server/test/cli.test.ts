import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  CHILD_KEYS,
  call,
  keyEnv,
  killChildren,
  masterHeaders,
  removeTempDirs,
  restHeaders,
  spawnCli,
  startCli,
  tempDir,
  waitExit,
} from './helpers/child.ts';

/** `npm run server` (server/src/cli.ts) as a child process: options, dev keys, bad options, SIGTERM. */

afterAll(async () => {
  await killChildren();
  removeTempDirs();
});

function writeConfig(dir: string, content: unknown, name = 'bds.json'): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

describe('npm run server: options', () => {
  afterEach(async () => {
    await killChildren();
  });

  it('starts from env keys alone at BDS_MOUNT_PATH on the port PORT=0 picked, and stops cleanly on SIGTERM', async () => {
    const dataDir = tempDir();
    const child = await startCli({ ...keyEnv(), BDS_MOUNT_PATH: '/v2', BDS_DATA_DIR: dataDir });
    expect(child.url).toMatch(/^http:\/\/localhost:\d+\/v2$/);
    expect(child.port).toBeGreaterThan(0);

    // Mounted at /v2, not at /api.
    const health = await call(`${child.base}/health`, 'GET', {});
    expect(health.status).toBe(200);
    expect(health.json).toEqual({ status: 'ok' });
    const info = await call(`${child.base}/serverInfo`, 'GET', restHeaders());
    expect(info.status, info.text).toBe(200);
    expect(typeof info.json.serverVersion).toBe('string');
    const wrongMount = await call(`http://127.0.0.1:${child.port}/api/serverInfo`, 'GET', restHeaders());
    expect(wrongMount.status).toBe(404);

    // The env keys are the keys.
    const wrongKey = await call(
      `${child.base}/serverInfo`,
      'GET',
      restHeaders({ ...CHILD_KEYS, restAPIKey: 'x' }),
    );
    expect(wrongKey.status).toBe(403);
    expect(wrongKey.json).toEqual({ code: 119, error: 'unauthorized' });
    const schemas = await call(`${child.base}/schemas`, 'GET', masterHeaders());
    expect(schemas.status, schemas.text).toBe(200);

    // The store lives in BDS_DATA_DIR; configured keys are neither generated nor printed.
    expect(existsSync(path.join(dataDir, 'data.sqlite'))).toBe(true);
    expect(existsSync(path.join(dataDir, 'keys.json'))).toBe(false);
    expect(child.stdout()).not.toContain(CHILD_KEYS.masterKey);

    child.proc.kill('SIGTERM');
    const exit = await waitExit(child);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('store closed');
  });

  it('reads --config FILE with nested and dotted keys; env wins over the file', async () => {
    const fileDataDir = tempDir();
    const envDataDir = tempDir();
    const configDir = tempDir('bds-cfg-');
    const file = writeConfig(configDir, {
      appId: CHILD_KEYS.appId,
      masterKey: CHILD_KEYS.masterKey,
      restAPIKey: 'rest-key-from-file',
      mountPath: '/from-file',
      dataDir: fileDataDir,
      maxLimit: 2,
      'requestComplexity.includeDepth': 1,
      requestComplexity: { includeCount: 2 },
    });
    const child = await startCli({ BDS_REST_API_KEY: 'rest-key-from-env', BDS_DATA_DIR: envDataDir }, [
      '--config',
      file,
    ]);
    expect(child.url).toMatch(/\/from-file$/);

    // Env wins: the REST key from the env works, the one from the file does not; data goes to the env dir.
    const fromEnv = { appId: CHILD_KEYS.appId, restAPIKey: 'rest-key-from-env' };
    const fromFile = { appId: CHILD_KEYS.appId, restAPIKey: 'rest-key-from-file' };
    expect((await call(`${child.base}/classes/Item`, 'GET', restHeaders(fromEnv))).status).toBe(200);
    expect((await call(`${child.base}/classes/Item`, 'GET', restHeaders(fromFile))).status).toBe(403);
    expect(existsSync(path.join(envDataDir, 'data.sqlite'))).toBe(true);
    expect(existsSync(path.join(fileDataDir, 'data.sqlite'))).toBe(false);

    // maxLimit from the file.
    for (let n = 0; n < 3; n++) {
      const created = await call(`${child.base}/classes/Item`, 'POST', masterHeaders(), { n });
      expect(created.status, created.text).toBe(201);
    }
    const page = await call(`${child.base}/classes/Item?limit=10`, 'GET', restHeaders(fromEnv));
    expect(page.status, page.text).toBe(200);
    expect(page.json.results).toHaveLength(2);

    // The dotted key and the nested object both reached requestComplexity.
    const deep = await call(`${child.base}/classes/Item?include=a.b`, 'GET', restHeaders(fromEnv));
    expect(deep.status).toBe(400);
    expect(deep.json).toEqual({ code: 102, error: 'Include depth of 2 exceeds the maximum of 1.' });
    const many = await call(`${child.base}/classes/Item?include=a,b,c`, 'GET', restHeaders(fromEnv));
    expect(many.status).toBe(400);
    expect(many.json).toEqual({ code: 102, error: 'Include count of 3 exceeds the maximum of 2.' });
    const shallow = await call(`${child.base}/classes/Item?include=a,b`, 'GET', restHeaders(fromEnv));
    expect(shallow.status, shallow.text).toBe(200);
  });

  it('reads the file named by BDS_CONFIG', async () => {
    const configDir = tempDir('bds-cfg-');
    const file = writeConfig(configDir, {
      appId: 'cfg-app',
      masterKey: 'cfg-master-key-0123',
      mountPath: '/cfg',
      dataDir: tempDir(),
    });
    const child = await startCli({ BDS_CONFIG: file });
    expect(child.url).toMatch(/\/cfg$/);
    const keys = { appId: 'cfg-app', masterKey: 'cfg-master-key-0123' };
    const schemas = await call(`${child.base}/schemas`, 'GET', masterHeaders(keys));
    expect(schemas.status, schemas.text).toBe(200);
    const wrong = await call(`${child.base}/schemas`, 'GET', masterHeaders(CHILD_KEYS));
    expect(wrong.status).toBe(403);
  });

  it('without keys, generates them once into keys.json (mode 0600), prints them, and reuses them', async () => {
    const dataDir = tempDir();
    const keysFile = path.join(dataDir, 'keys.json');
    const first = await startCli({ BDS_DATA_DIR: dataDir });
    expect(first.url).toMatch(/^http:\/\/localhost:\d+\/api$/);
    expect(existsSync(keysFile)).toBe(true);
    expect(statSync(keysFile).mode & 0o777).toBe(0o600);
    const text = readFileSync(keysFile, 'utf8');
    const keys = JSON.parse(text) as { appId: string; masterKey: string; restAPIKey: string };
    expect(keys.appId).toEqual(expect.any(String));
    expect(keys.masterKey.length).toBeGreaterThanOrEqual(8);
    expect(keys.restAPIKey).toEqual(expect.any(String));
    // Printed (after the address) so a developer can use them.
    await vi.waitFor(() => expect(first.stdout()).toContain(keys.restAPIKey), { timeout: 5000 });
    expect(first.stdout()).toContain(keys.appId);
    expect(first.stdout()).toContain(keys.masterKey);
    expect(first.stdout()).toContain(keys.restAPIKey);
    // They are the service's keys.
    expect((await call(`${first.base}/schemas`, 'GET', masterHeaders(keys))).status).toBe(200);
    expect((await call(`${first.base}/classes/Item`, 'GET', restHeaders(keys))).status).toBe(200);
    const created = await call(`${first.base}/classes/Item`, 'POST', masterHeaders(keys), { n: 1 });
    expect(created.status, created.text).toBe(201);
    first.proc.kill('SIGTERM');
    expect((await waitExit(first)).code).toBe(0);

    // Second start: same keys (file untouched), same data.
    const second = await startCli({ BDS_DATA_DIR: dataDir });
    expect(readFileSync(keysFile, 'utf8')).toBe(text);
    await vi.waitFor(() => expect(second.stdout()).toContain(keys.masterKey), { timeout: 5000 });
    const again = await call(
      `${second.base}/classes/Item/${created.json.objectId}`,
      'GET',
      masterHeaders(keys),
    );
    expect(again.status, again.text).toBe(200);
    expect(again.json.n).toBe(1);
    expect((await call(`${second.base}/classes/Item`, 'GET', restHeaders(keys))).status).toBe(200);
  });
});

describe('npm run server: bad options', () => {
  // The cases run concurrently: no afterEach that would kill a neighbour's child.
  interface BadCase {
    name: string;
    option: string;
    config?: unknown;
    env?: Record<string, string>;
    args?: string[];
  }
  const badCases: BadCase[] = [
    { name: 'an unknown key in the file', option: 'bogusOption', config: { bogusOption: 1 } },
    {
      name: 'an unknown dotted key in the file',
      option: 'requestComplexity.bogus',
      config: { 'requestComplexity.bogus': 3 },
    },
    { name: 'a string for a number', option: 'maxLimit', config: { maxLimit: 'many' } },
    {
      name: 'a string for a boolean',
      option: 'allowClientClassCreation',
      config: { allowClientClassCreation: 'yes' },
    },
    {
      name: 'a nested value out of range',
      option: 'requestComplexity.includeDepth',
      config: { requestComplexity: { includeDepth: -5 } },
    },
    { name: 'a bad size', option: 'maxUploadSize', config: { maxUploadSize: 'lots' } },
    { name: 'PORT that is not a number', option: 'port', env: { PORT: 'abc' } },
    { name: 'PORT out of range', option: 'port', env: { PORT: '70000' } },
    { name: 'BDS_MOUNT_PATH without a leading slash', option: 'mountPath', env: { BDS_MOUNT_PATH: 'api' } },
    { name: 'a master key that is too short', option: 'masterKey', env: { BDS_MASTER_KEY: 'short' } },
    { name: 'a config file that is not JSON', option: 'config', config: '{"appId": ' },
    { name: 'a config file that is a JSON array', option: 'config', config: '[1, 2]' },
    {
      name: 'a config file that does not exist',
      option: 'config',
      args: ['--config', '/nonexistent/bds.json'],
    },
  ];

  it.concurrent.each(badCases)(
    'stops with exit code 2 naming the option: $name',
    async (c) => {
      const args = [...(c.args ?? [])];
      const dataDir = tempDir();
      if (c.config !== undefined) args.push('--config', writeConfig(tempDir('bds-cfg-'), c.config));
      const child = spawnCli({ ...keyEnv(), BDS_DATA_DIR: dataDir, PORT: '0', ...c.env }, args);
      const exit = await waitExit(child);
      expect(exit.code, child.stderr()).toBe(2);
      expect(child.stderr()).toContain(`"${c.option}"`);
      expect(child.stdout()).not.toContain('listening');
      // Generous: several of these start at once beside the other suites on a small machine.
    },
    60_000,
  );

  it('stops with exit code 2 when production has no keys, and on an unknown command-line flag', async () => {
    const prod = spawnCli({ NODE_ENV: 'production', BDS_DATA_DIR: tempDir(), PORT: '0' });
    const flag = spawnCli({ ...keyEnv(), BDS_DATA_DIR: tempDir(), PORT: '0' }, ['--bogus-flag']);
    const [prodExit, flagExit] = await Promise.all([waitExit(prod), waitExit(flag)]);
    expect(prodExit.code, prod.stderr()).toBe(2);
    expect(prod.stderr()).toContain('"appId"');
    expect(flagExit.code, flag.stderr()).toBe(2);
    expect(flag.stderr()).toContain('bogus-flag');
  });
});

describe('npm run server: SIGTERM', () => {
  afterEach(async () => {
    await killChildren();
  });

  it('drains in-flight requests, closes the store, exits 0; every acknowledged write survives', async () => {
    const dataDir = tempDir();
    const env = { ...keyEnv(), BDS_DATA_DIR: dataDir };
    const child = await startCli(env);
    const first = await call(`${child.base}/classes/Item`, 'POST', masterHeaders(), { n: -1 });
    expect(first.status, first.text).toBe(201);

    interface Outcome {
      status: number;
      ids: string[];
      /** performance.now() when the answer was complete. */
      at: number;
    }
    const batch = (b: number) =>
      call(`${child.base}/batch`, 'POST', masterHeaders(), {
        requests: Array.from({ length: 100 }, (_, i) => ({
          method: 'POST',
          path: '/api/classes/Item',
          body: { n: b * 1000 + i },
        })),
      }).then(
        (r): Outcome => ({
          status: r.status,
          ids: r.status === 200 ? (r.json as any[]).map((x) => x.success?.objectId).filter(Boolean) : [],
          at: performance.now(),
        }),
      );
    const single = (i: number) =>
      call(`${child.base}/classes/Item`, 'POST', masterHeaders(), { n: 100_000 + i }).then(
        (r): Outcome => ({
          status: r.status,
          ids: r.status === 201 ? [r.json.objectId] : [],
          at: performance.now(),
        }),
      );
    // Open the connections first (fetch keeps them alive), so that the writes below arrive on
    // connections the service has already accepted.
    await Promise.all(Array.from({ length: 48 }, () => call(`${child.base}/health`, 'GET', {})));
    const batches = Array.from({ length: 8 }, (_, b) => batch(b));
    const singles = Array.from({ length: 40 }, (_, i) => single(i));
    const pending = [...batches, ...singles];

    // SIGTERM as soon as the first batch is answered: the other requests are still being worked on.
    const trigger = await Promise.any(batches);
    child.proc.kill('SIGTERM');
    const sigtermAt = performance.now();
    const settled = await Promise.allSettled(pending);
    const exit = await waitExit(child);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('SIGTERM');
    expect(child.stdout()).toContain('store closed');
    expect(child.stderr()).not.toMatch(/error/i);

    const answered = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    // A batch that was answered ran all of its members.
    for (const s of settled.slice(0, batches.length)) {
      if (s.status === 'fulfilled' && s.value.status === 200) expect(s.value.ids).toHaveLength(100);
    }
    // A request is either finished properly or refused; never a server error from a closed store.
    for (const a of answered) expect(a.status).toBeLessThan(500);
    // Draining: requests in flight at SIGTERM were still answered, successfully.
    const afterSignal = answered.filter((a) => a !== trigger && a.at > sigtermAt && a.status < 300);
    expect(afterSignal.length).toBeGreaterThan(0);
    const acknowledged = [first.json.objectId as string, ...answered.flatMap((a) => a.ids)];
    // At least the trigger and one batch drained after the signal: 200 rows and more.
    expect(acknowledged.length).toBeGreaterThan(200);

    // Restart on the same data dir: every acknowledged row is there.
    const again = await startCli(env);
    const all = await call(`${again.base}/classes/Item?limit=1000&keys=n`, 'GET', masterHeaders());
    expect(all.status, all.text).toBe(200);
    const present = new Set((all.json.results as Array<{ objectId: string }>).map((r) => r.objectId));
    const missing = acknowledged.filter((id) => !present.has(id));
    expect(missing).toEqual([]);
  });
});
