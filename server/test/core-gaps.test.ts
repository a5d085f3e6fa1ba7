import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService } from '../src/index.ts';
import { createLogger, type LogLevel } from '../src/kernel/log.ts';
import { createRole, createUser, pointer } from './helpers/access-world.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

const NEEDS_AUTH = 'Permission denied, user needs to be authenticated.';
const LOCKED = { '*': true, requiresAuthentication: true };

describe('a rollback drops the cached roles', () => {
  let t: TestService;
  beforeAll(async () => {
    // The fixture's beforeLogin trigger makes a login resolve the user's roles inside the batch.
    t = await startService({ cloud: CLOUD_MODULE });
  });
  afterAll(() => t.close());

  it('a failed transactional batch that added a user to a role grants nothing afterwards', async () => {
    const signup = await t.request('POST', '/users', { body: { username: 'grace', password: 'pw-grace' } });
    expect(signup.status).toBe(201);
    const user = {
      objectId: signup.json.objectId as string,
      token: signup.json.sessionToken as string,
      password: 'pw-grace',
    };
    const roleId = await createRole(t, 'Editors');
    await t.request('POST', '/schemas/Secret', {
      as: 'master',
      body: { fields: { title: { type: 'String' } } },
    });
    await t.request('POST', '/classes/Secret', {
      as: 'master',
      body: { title: 'for editors', ACL: { 'role:Editors': { read: true } } },
    });
    // The user's (empty) roles are resolved and cached before the batch.
    const before = await t.request('GET', '/classes/Secret', { sessionToken: user.token });
    expect(before.status).toBe(200);
    expect(before.json.results).toEqual([]);

    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        transaction: true,
        requests: [
          {
            method: 'PUT',
            path: `/roles/${roleId}`,
            body: { users: { __op: 'AddRelation', objects: [pointer('_User', user.objectId)] } },
          },
          // Resolves the user's roles inside the transaction (the login trigger sees its caller).
          { method: 'POST', path: '/login', body: { username: 'grace', password: user.password } },
          { method: 'POST', path: '/classes/Secret', body: { title: { __op: 'Increment', amount: 1 } } },
        ],
      },
    });
    expect(batch.status).toBe(400);

    const role = await t.request('GET', `/roles/${roleId}`, { as: 'master' });
    expect(role.status).toBe(200);
    const members = await t.request('GET', '/users', {
      as: 'master',
      query: { where: { $relatedTo: { object: pointer('_Role', roleId), key: 'users' } } },
    });
    expect(members.json.results).toEqual([]);

    for (const token of [user.token, (await login(t, 'grace', user.password)).sessionToken]) {
      const after = await t.request('GET', '/classes/Secret', { sessionToken: token });
      expect(after.status).toBe(200);
      expect(after.json.results).toEqual([]);
    }
  });
});

async function login(t: TestService, username: string, password: string) {
  const res = await t.request('POST', '/login', { body: { username, password } });
  expect(res.status).toBe(200);
  return res.json as { sessionToken: string };
}

/**
 * Class Open (with `openFields`) and class Locked behind LOCKED for every operation, holding one
 * public row whose relation `rel` points to the one Open row.
 */
async function seedLockedOwner(
  t: TestService,
  openFields: Record<string, unknown>,
): Promise<{ openId: string; ownerId: string }> {
  const clp = Object.fromEntries(
    ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'].map((op) => [op, LOCKED]),
  );
  await t.request('POST', '/schemas/Open', { as: 'master', body: { fields: openFields } });
  await t.request('POST', '/schemas/Locked', {
    as: 'master',
    body: {
      fields: { title: { type: 'String' }, rel: { type: 'Relation', targetClass: 'Open' } },
      classLevelPermissions: clp,
    },
  });
  const open = await t.request('POST', '/classes/Open', { as: 'master', body: { label: 'open' } });
  const owner = await t.request('POST', '/classes/Locked', {
    as: 'master',
    body: {
      title: 'original',
      ACL: { '*': { read: true, write: true } },
      rel: { __op: 'AddRelation', objects: [pointer('Open', open.json.objectId)] },
    },
  });
  return { openId: open.json.objectId as string, ownerId: owner.json.objectId as string };
}

const refused = (
  name: string,
  s: Omit<Scenario, 'name' | 'status' | 'code' | 'errorContains'>,
): Scenario => ({
  name,
  ...s,
  status: 404,
  code: 101,
  errorContains: NEEDS_AUTH,
  after: async (ctx, res) => {
    expect(res.json).toEqual({ code: 101, error: NEEDS_AUTH });
    await s.after?.(ctx, res);
  },
});

runScenarios(
  'requiresAuthentication: subqueries, $relatedTo and addField refuse an anonymous caller',
  [
    refused('$relatedTo with an owner in the class', {
      method: 'GET',
      path: '/classes/Open',
      query: {
        where: {
          $relatedTo: { object: { __type: 'Pointer', className: 'Locked', objectId: '{row}' }, key: 'rel' },
        },
      },
    }),
    refused('$notInQuery into the class', {
      method: 'GET',
      path: '/classes/Open',
      query: { where: { target: { $notInQuery: { className: 'Locked', where: {} } } } },
    }),
    refused('$dontSelect into the class', {
      method: 'GET',
      path: '/classes/Open',
      query: {
        where: { label: { $dontSelect: { query: { className: 'Locked', where: {} }, key: 'title' } } },
      },
    }),
    refused('addField: a new field, and the schema is unchanged', {
      method: 'POST',
      path: '/classes/AddLocked',
      body: { title: 'x', sneaked: 'in' },
      after: async (ctx) => {
        const schema = await ctx.t.request('GET', '/schemas/AddLocked', { as: 'master' });
        expect(schema.json.fields.sneaked).toBeUndefined();
      },
    }),
    {
      name: 'addField with a session: the field is added',
      method: 'POST',
      path: '/classes/AddLocked',
      body: { title: 'y', added: 'yes' },
      sessionToken: '{token}',
      status: 201,
    },
    {
      name: 'an existing field, anonymous: no addField needed',
      method: 'POST',
      path: '/classes/AddLocked',
      body: { title: 'z' },
      status: 201,
    },
  ],
  {
    setup: async (ctx) => {
      const { t, vars } = ctx;
      const { openId, ownerId } = await seedLockedOwner(t, {
        label: { type: 'String' },
        target: { type: 'Pointer', targetClass: 'Locked' },
      });
      vars.row = ownerId;
      await t.request('PUT', `/classes/Open/${openId}`, {
        as: 'master',
        body: { target: pointer('Locked', vars.row!) },
      });
      await t.request('POST', '/schemas/AddLocked', {
        as: 'master',
        body: {
          fields: { title: { type: 'String' } },
          classLevelPermissions: {
            find: { '*': true },
            get: { '*': true },
            count: { '*': true },
            create: { '*': true },
            update: { '*': true },
            delete: { '*': true },
            addField: LOCKED,
          },
        },
      });
      vars.token = (await createUser(t)).token;
    },
  },
);

describe('the log level filters the request lines', () => {
  async function run(level: LogLevel) {
    const lines: Array<Record<string, unknown>> = [];
    const destination = { write: (line: string) => void lines.push(JSON.parse(line)) };
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-test-'));
    const service = await createService(
      { ...KEYS, dataDir, port: 0, host: '127.0.0.1', logLevel: level, rateLimit: [] },
      { log: createLogger(level, destination) },
    );
    try {
      const { url } = await service.listen(0, '127.0.0.1');
      const app = { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-REST-API-Key': KEYS.restAPIKey };
      const headers = { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-Master-Key': KEYS.masterKey };
      const created = await fetch(`${url}/classes/Note`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: 'hello', password: 'not-a-field-secret' }),
      });
      expect(created.status).toBe(201);
      const signup = await fetch(`${url}/users`, {
        method: 'POST',
        headers: { ...app, 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: 'logged', password: 'hunter2-secret' }),
      });
      const token = ((await signup.json()) as { sessionToken: string }).sessionToken;
      const where = encodeURIComponent(JSON.stringify({ title: 'hello' }));
      const found = await fetch(`${url}/classes/Note?where=${where}&limit=5`, {
        headers: { ...app, 'X-Backend-Session-Token': token },
      });
      expect(found.status).toBe(200);
      const login = await fetch(`${url}/login?username=logged&password=hunter2-secret`, {
        headers: app,
      });
      expect(login.status).toBe(200);
      const missing = await fetch(`${url}/classes/Note/nope`, { headers });
      expect(missing.status).toBe(404);
      return { lines, token };
    } finally {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  it("at 'warn' no request line is written", async () => {
    const { lines } = await run('warn');
    expect(lines.filter((l) => l.msg === 'request')).toEqual([]);
    for (const line of lines) expect(line.level).toBeGreaterThanOrEqual(40);
  });

  it("at 'info' one line per request: method, path (below the mount path) without the query, status, duration, caller; no secret", async () => {
    const { lines, token } = await run('info');
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.method, l.path, l.status, l.caller])).toEqual([
      ['POST', '/classes/Note', 201, 'master'],
      ['POST', '/users', 201, 'anonymous'],
      ['GET', '/classes/Note', 200, 'user'],
      ['GET', '/login', 200, 'anonymous'],
      ['GET', '/classes/Note/nope', 404, 'master'],
    ]);
    for (const line of requests) {
      expect(typeof line.ms).toBe('number');
      expect(line.ms as number).toBeGreaterThanOrEqual(0);
    }
    expect(requests[2]!.user).toEqual(expect.any(String));
    expect(requests[4]!.code).toBe(101);
    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    for (const secret of [
      KEYS.masterKey,
      KEYS.restAPIKey,
      token,
      'hunter2-secret',
      'not-a-field-secret',
      'where',
      'limit=5',
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('requiresAuthentication: a signed-in caller passes through $relatedTo', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(() => t.close());

  it('answers the related rows to a session, and 101 to an anonymous caller', async () => {
    const { ownerId } = await seedLockedOwner(t, { label: { type: 'String' } });
    const query = { where: { $relatedTo: { object: pointer('Locked', ownerId), key: 'rel' } } };
    const { token } = await createUser(t);
    const signedIn = await t.request('GET', '/classes/Open', { sessionToken: token, query });
    expect(signedIn.status).toBe(200);
    expect(signedIn.json.results.map((r: { label: string }) => r.label)).toEqual(['open']);
    const anonymous = await t.request('GET', '/classes/Open', { query });
    expect(anonymous.status).toBe(404);
    expect(anonymous.json).toEqual({ code: 101, error: NEEDS_AUTH });
  });
});
