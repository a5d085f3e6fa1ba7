import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../src/config/options.ts';
import { createService } from '../src/index.ts';
import { createLogger, writeRequestLine } from '../src/kernel/log.ts';
import { createClass, createRole, createRow, createUser } from './helpers/access-world.ts';
import { KEYS, startService, storeRelations, type TestService } from './helpers/service.ts';

describe('the role cache follows every _Role write, purge included', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('purging _Role ends the grants of its roles at once', async () => {
    const user = await createUser(t);
    await createRole(t, 'Readers', { users: [user.id] });
    await createClass(t, 'Vault', { secret: { type: 'String' } });
    const row = await createRow(t, 'Vault', { secret: 's', ACL: { 'role:Readers': { read: true } } });
    expect((await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token })).status).toBe(200);
    const purge = await t.request('DELETE', '/purge/_Role', { as: 'master' });
    expect(purge.status).toBe(200);
    const after = await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token });
    expect(after.status).toBe(404);
    expect(after.json).toEqual({ code: 101, error: 'Object not found.' });
  });

  it('a role removed from a user ends its grant on the next request', async () => {
    const user = await createUser(t);
    const role = await createRole(t, 'Temps', { users: [user.id] });
    const row = await createRow(t, 'Vault', { secret: 't', ACL: { 'role:Temps': { read: true } } });
    expect((await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token })).status).toBe(200);
    await t.request('PUT', `/roles/${role}`, {
      as: 'master',
      body: {
        users: {
          __op: 'RemoveRelation',
          objects: [{ __type: 'Pointer', className: '_User', objectId: user.id }],
        },
      },
    });
    expect((await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token })).status).toBe(404);
  });

  it('a logged-out token stops working at once (the session cache follows the delete)', async () => {
    const signUp = await t.request('POST', '/users', { body: { username: 'cached', password: 'pw' } });
    const token = signUp.json.sessionToken as string;
    expect((await t.request('GET', '/users/me', { sessionToken: token })).status).toBe(200);
    expect((await t.request('POST', '/logout', { sessionToken: token })).status).toBe(200);
    const me = await t.request('GET', '/users/me', { sessionToken: token });
    expect(me.status).toBe(400);
    expect(me.json).toEqual({ code: 209, error: 'Invalid session token' });
  });
});

describe('structured request log', () => {
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  let service: Awaited<ReturnType<typeof createService>>;
  let url: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'bds-log-'));
    const sink = new Writable({
      write(chunk, _enc, done) {
        raw += chunk.toString();
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    service = await createService(
      { ...KEYS, dataDir, logLevel: 'info' },
      { log: createLogger('info', sink) },
    );
    url = (await service.listen(0, '127.0.0.1')).url;
  });
  afterAll(async () => {
    await service?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (method: string, p: string, headers: Record<string, string> = {}, body?: unknown) =>
    fetch(`${url}${p}`, {
      method,
      headers: {
        'X-Backend-Application-Id': KEYS.appId,
        'X-Backend-REST-API-Key': KEYS.restAPIKey,
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('one line per request: method, path, status, code, duration, caller kind and user; no secret', async () => {
    const signUp = await call('POST', '/users', {}, { username: 'logged', password: 'hunter2-secret' });
    const { objectId, sessionToken } = (await signUp.json()) as { objectId: string; sessionToken: string };
    await call('GET', `/login?username=logged&password=hunter2-secret`);
    await call('GET', '/users/me', { 'X-Backend-Session-Token': sessionToken });
    await call('GET', '/classes/Nothing/abc', { 'X-Backend-Master-Key': KEYS.masterKey });
    service.core.log.info(
      { sessionToken, nested: { password: 'hunter2-secret', masterKey: KEYS.masterKey } },
      'probe',
    );
    service.core.log.flush();
    await new Promise((r) => setTimeout(r, 50));
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.method, l.path, l.status])).toEqual([
      ['POST', '/users', 201],
      ['GET', '/login', 200],
      ['GET', '/users/me', 200],
      ['GET', '/classes/Nothing/abc', 404],
    ]);
    expect(requests[2]).toMatchObject({ caller: 'user', user: objectId, level: 30 });
    expect(requests[3]).toMatchObject({ caller: 'master', code: 101 });
    for (const l of requests) expect(typeof l.ms).toBe('number');
    expect(lines.find((l) => l.msg === 'probe')).toMatchObject({
      sessionToken: '[FILTERED]',
      nested: { password: '[FILTERED]', masterKey: '[FILTERED]' },
    });
    expect(raw).not.toContain('hunter2-secret');
    expect(raw).not.toContain(sessionToken);
    expect(raw).not.toContain(KEYS.masterKey);
    expect(raw).not.toContain(KEYS.restAPIKey);
  });

  it('the request line is the line pino itself writes for the same record (except the time)', () => {
    const captured: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        captured.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const log = createLogger('info', sink);
    const record = {
      method: 'GET',
      path: '/classes/A"b\\c/\u2028x',
      status: 404,
      code: 101,
      ms: 0.42,
      caller: 'user',
      user: 'u"1',
    };
    writeRequestLine(log, record);
    log.info(record, 'request');
    writeRequestLine(log, {
      ...record,
      method: undefined,
      code: undefined,
      caller: undefined,
      user: undefined,
    });
    log.info(
      { ...record, method: undefined, code: undefined, caller: undefined, user: undefined },
      'request',
    );
    const [ours, pinos, oursShort, pinosShort] = captured.map((l) => {
      const { time, ...rest } = JSON.parse(l) as Record<string, unknown>;
      expect(typeof time).toBe('number');
      return rest;
    });
    expect(ours).toEqual(pinos);
    expect(Object.keys(ours!)).toEqual(Object.keys(pinos!));
    expect(oursShort).toEqual(pinosShort);
    const silent = createLogger('warn', sink);
    writeRequestLine(silent, record);
    expect(captured).toHaveLength(4);
  });

  it('the level is an option: at warn, requests are not logged', () => {
    expect(validateOptions({ ...KEYS, logLevel: 'warn' }).logLevel).toBe('warn');
    expect(() => validateOptions({ ...KEYS, logLevel: 'loud' })).toThrow(/Invalid option "logLevel"/);
  });
});

describe('the store seam', () => {
  it('databaseURI chooses the SQLite file; anything else stops the start naming the option', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-uri-'));
    const file = path.join(dir, 'elsewhere.sqlite');
    const service = await createService({
      ...KEYS,
      dataDir: path.join(dir, 'data'),
      databaseURI: `sqlite:${file}`,
      logLevel: 'warn',
    });
    await service.close();
    expect(existsSync(file)).toBe(true);
    expect(existsSync(path.join(dir, 'data', 'data.sqlite'))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
    expect(() => validateOptions({ ...KEYS, databaseURI: 'mysql://x' })).toThrow(
      /Invalid option "databaseURI"/,
    );
  });

  it('names longer than 63 bytes (a 120-character class with a relation and an index) fit PostgreSQL', async () => {
    const t = await startService();
    try {
      const className = `L${'o'.repeat(118)}g`;
      expect(className).toHaveLength(120);
      const created = await t.request('POST', `/schemas/${className}`, {
        as: 'master',
        body: {
          fields: { n: { type: 'Number' }, friends: { type: 'Relation', targetClass: '_User' } },
          indexes: { by_n_with_a_long_index_name: { n: 1 } },
        },
      });
      expect(created.status).toBe(200);
      const user = await createUser(t);
      const row = await t.request('POST', `/classes/${className}`, {
        as: 'master',
        body: {
          n: 5,
          friends: {
            __op: 'AddRelation',
            objects: [{ __type: 'Pointer', className: '_User', objectId: user.id }],
          },
        },
      });
      expect(row.status).toBe(201);
      const found = await t.request('GET', '/users', {
        as: 'master',
        query: {
          where: {
            $relatedTo: {
              object: { __type: 'Pointer', className, objectId: row.json.objectId },
              key: 'friends',
            },
          },
        },
      });
      expect(found.json.results.map((u: { objectId: string }) => u.objectId)).toEqual([user.id]);
      const names = (await storeRelations(t)).map((name) => ({ name }));
      expect(names.length).toBeGreaterThan(10);
      for (const { name } of names) expect(Buffer.byteLength(name), name).toBeLessThanOrEqual(63);
      expect(names.some(({ name }) => name.startsWith('Looo') && /_[0-9a-f]{8}$/.test(name))).toBe(true);
    } finally {
      await t.close();
    }
  });
});

describe('password hashing cost', () => {
  it('is an option: new hashes take it, stored ones keep theirs, and logins work with both', async () => {
    const t = await startService({ passwordHashCost: 12 });
    try {
      const made = await t.request('POST', '/users', { body: { username: 'cheap', password: 'pw' } });
      expect(made.status).toBe(201);
      const hash = async (id: string) =>
        (await t.service.data.lookups.internal('_User', 'objectId', id, ['_hashed_password']))[0]!
          ._hashed_password as string;
      expect(await hash(made.json.objectId)).toMatch(/^scrypt\$4096\$8\$1\$/);
      expect(
        (await t.request('POST', '/login', { body: { username: 'cheap', password: 'pw' } })).status,
      ).toBe(200);
      expect(() => validateOptions({ ...KEYS, passwordHashCost: 11 })).toThrow(
        /Invalid option "passwordHashCost"/,
      );
    } finally {
      await t.close();
    }
  });
});
