import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WriteEvent } from '../src/index.ts';
import { type RequestOptions, startService, type TestResponse, type TestService } from './helpers/service.ts';

/**
 * Every write route emits exactly the events of the one write pipeline, after commit: one row per
 * route (a new route is one more row). Each row: optional setup (its events are not counted), the
 * request, the status it answers, and the events it must emit as [class, op, count], nothing else,
 * with the source they must carry.
 */
interface Row {
  name: string;
  setup?: (v: Vars, t: TestService) => Promise<void>;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  as?: RequestOptions['as'];
  sessionToken?: string;
  headers?: Record<string, string>;
  body?: unknown;
  status: number;
  events: Array<[className: string, op: WriteEvent['op'], count: number]>;
  source?: WriteEvent['source'];
  /** For writes done after the answer (mail tokens): wait until this many events arrived. */
  settle?: (v: Vars, t: TestService) => Promise<void>;
}

type Vars = Record<string, string>;

const EVENTS_CLOUD = fileURLToPath(new URL('./fixtures/events-cloud.ts', import.meta.url));

const secret = new Secret({ size: 20 }).base32;
const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });

/** Mail goes out after the answer: wait (generously) until one reached `to`. */
async function waitForMail(t: TestService, to: string): Promise<void> {
  for (let i = 0; i < 250; i++) {
    const res = await t.request('GET', '/devMailbox', { as: 'master' });
    if ((res.json.results as Array<{ to: string }>).some((m) => m.to === to)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail to ${to}`);
}

const fill = (text: string, v: Vars) =>
  text.replace(/\{(\w+)\}/g, (_, k: string) => {
    if (!(k in v)) throw new Error(`row uses {${k}} but no setup defined it`);
    return v[k]!;
  });

async function signUp(t: TestService, username: string, extra: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/users', { body: { username, password: 'pw', ...extra } });
  if (res.status !== 201) throw new Error(res.text);
  return res.json as { objectId: string; sessionToken: string };
}

async function login(t: TestService, username: string, headers?: Record<string, string>) {
  const res = await t.request('POST', '/login', { body: { username, password: 'pw' }, headers });
  if (res.status !== 200) throw new Error(res.text);
  return res.json.sessionToken as string;
}

async function create(t: TestService, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', path, { as: 'master', body });
  if (res.status !== 201) throw new Error(res.text);
  return res.json.objectId as string;
}

const rows: Row[] = [
  // ---- records ----
  {
    name: 'create a row',
    method: 'POST',
    path: '/classes/Post',
    as: 'master',
    body: { title: 'a' },
    status: 201,
    events: [['Post', 'create', 1]],
    source: 'rest',
  },
  {
    name: 'create a row in a new class: the class first',
    method: 'POST',
    path: '/classes/Fresh',
    as: 'master',
    body: { title: 'a' },
    status: 201,
    events: [
      ['_SCHEMA', 'create', 1],
      ['Fresh', 'create', 1],
    ],
  },
  {
    name: 'create a row with a new field: the schema change too',
    method: 'POST',
    path: '/classes/Post',
    as: 'master',
    body: { title: 'b', extra: 3 },
    status: 201,
    events: [
      ['_SCHEMA', 'update', 1],
      ['Post', 'create', 1],
    ],
  },
  {
    name: 'update a row',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'u', likes: 0 });
    },
    method: 'PUT',
    path: '/classes/Post/{post}',
    as: 'master',
    body: { likes: { __op: 'Increment', amount: 1 } },
    status: 200,
    events: [['Post', 'update', 1]],
  },
  {
    name: 'delete a row',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'd' });
    },
    method: 'DELETE',
    path: '/classes/Post/{post}',
    as: 'master',
    status: 200,
    events: [['Post', 'delete', 1]],
  },
  {
    name: 'a refused write emits nothing',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'x', ACL: {} });
    },
    method: 'PUT',
    path: '/classes/Post/{post}',
    body: { title: 'y' },
    status: 404,
    events: [],
  },
  {
    name: 'batch members, each an event with source batch',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'b' });
    },
    method: 'POST',
    path: '/batch',
    as: 'master',
    body: {
      requests: [
        { method: 'POST', path: '/classes/Post', body: { title: 'one' } },
        { method: 'POST', path: '/classes/Post', body: { title: 'two' } },
        { method: 'PUT', path: '/classes/Post/{post}', body: { title: 'three' } },
      ],
    },
    status: 200,
    events: [
      ['Post', 'create', 2],
      ['Post', 'update', 1],
    ],
    source: 'batch',
  },
  {
    name: 'a transactional batch that fails emits nothing',
    method: 'POST',
    path: '/batch',
    as: 'master',
    body: {
      transaction: true,
      requests: [
        { method: 'POST', path: '/classes/Post', body: { title: 'kept?' } },
        { method: 'PUT', path: '/classes/Post/nosuchrow0', body: { title: 'no' } },
      ],
    },
    status: 404,
    events: [],
  },
  // ---- users and sessions ----
  {
    name: 'sign-up: the user and its session',
    method: 'POST',
    path: '/users',
    body: { username: 'signup1', password: 'pw' },
    status: 201,
    events: [
      ['_User', 'create', 1],
      ['_Session', 'create', 1],
    ],
    source: 'account',
  },
  {
    name: 'anonymous sign-up',
    method: 'POST',
    path: '/users',
    body: { authData: { anonymous: { id: '4f2d3b30-1111-4a5e-9c3a-000000000001' } } },
    status: 201,
    events: [
      ['_User', 'create', 1],
      ['_Session', 'create', 1],
    ],
  },
  {
    name: 'login: a session',
    setup: async (_v, t) => {
      await signUp(t, 'login1');
    },
    method: 'POST',
    path: '/login',
    body: { username: 'login1', password: 'pw' },
    status: 200,
    events: [['_Session', 'create', 1]],
    source: 'account',
  },
  {
    name: 'login from an installation replaces that installation’s session',
    setup: async (_v, t) => {
      await signUp(t, 'login2');
      await login(t, 'login2', { 'X-Backend-Installation-Id': 'device-login2' });
    },
    method: 'POST',
    path: '/login',
    headers: { 'X-Backend-Installation-Id': 'device-login2' },
    body: { username: 'login2', password: 'pw' },
    status: 200,
    events: [
      ['_Session', 'delete', 1],
      ['_Session', 'create', 1],
    ],
  },
  {
    name: 'logout: the session goes',
    setup: async (v, t) => {
      v.token = (await signUp(t, 'logout1')).sessionToken;
    },
    method: 'POST',
    path: '/logout',
    sessionToken: '{token}',
    status: 200,
    events: [['_Session', 'delete', 1]],
  },
  {
    name: 'password change: the user, and the other sessions revoked',
    setup: async (v, t) => {
      const u = await signUp(t, 'pwchange');
      v.user = u.objectId;
      v.token = u.sessionToken;
      await login(t, 'pwchange');
      await login(t, 'pwchange');
    },
    method: 'PUT',
    path: '/users/{user}',
    sessionToken: '{token}',
    body: { password: 'new-pw' },
    status: 200,
    events: [
      ['_User', 'update', 1],
      ['_Session', 'delete', 2],
    ],
  },
  {
    name: 'anonymous upgrade: the user, the old session out, a new one in',
    setup: async (v, t) => {
      const res = await t.request('POST', '/users', {
        body: { authData: { anonymous: { id: '4f2d3b30-1111-4a5e-9c3a-000000000002' } } },
      });
      v.user = res.json.objectId;
      v.token = res.json.sessionToken;
    },
    method: 'PUT',
    path: '/users/{user}',
    sessionToken: '{token}',
    body: { username: 'upgraded', password: 'pw', authData: { anonymous: null } },
    status: 200,
    events: [
      ['_User', 'update', 1],
      ['_Session', 'delete', 1],
      ['_Session', 'create', 1],
    ],
  },
  {
    name: 'MFA enrolment: the user',
    setup: async (v, t) => {
      const u = await signUp(t, 'mfa1');
      v.user = u.objectId;
      v.token = u.sessionToken;
    },
    method: 'PUT',
    path: '/users/{user}',
    sessionToken: '{token}',
    body: { authData: { mfa: { secret, token: '{code}' } } },
    status: 200,
    events: [['_User', 'update', 1]],
  },
  {
    name: 'delete a user: the row and its sessions',
    setup: async (v, t) => {
      const u = await signUp(t, 'gone1');
      v.user = u.objectId;
      v.token = u.sessionToken;
      await login(t, 'gone1');
    },
    method: 'DELETE',
    path: '/users/{user}',
    sessionToken: '{token}',
    status: 200,
    events: [
      ['_User', 'delete', 1],
      ['_Session', 'delete', 2],
    ],
  },
  {
    name: 'revoke a session',
    setup: async (v, t) => {
      const u = await signUp(t, 'revoke1');
      v.token = u.sessionToken;
      const me = await t.request('GET', '/sessions/me', { sessionToken: u.sessionToken });
      v.session = me.json.objectId;
    },
    method: 'DELETE',
    path: '/sessions/{session}',
    sessionToken: '{token}',
    status: 200,
    events: [['_Session', 'delete', 1]],
  },
  {
    name: 'master creates a session',
    setup: async (v, t) => {
      v.user = (await signUp(t, 'sessmaster')).objectId;
    },
    method: 'POST',
    path: '/sessions',
    as: 'master',
    body: { user: { __type: 'Pointer', className: '_User', objectId: '{user}' }, sessionToken: 'r:manual' },
    status: 201,
    events: [['_Session', 'create', 1]],
  },
  {
    name: 'password reset request: the reset token is written',
    setup: async (_v, t) => {
      await signUp(t, 'reset1', { email: 'reset1@example.com' });
    },
    method: 'POST',
    path: '/requestPasswordReset',
    body: { email: 'reset1@example.com' },
    status: 200,
    events: [['_User', 'update', 1]],
    settle: async (_v, t) => {
      await waitForMail(t, 'reset1@example.com');
    },
  },
  // ---- roles and installations ----
  {
    name: 'create a role',
    method: 'POST',
    path: '/roles',
    as: 'master',
    body: { name: 'Editors', ACL: { '*': { read: true } } },
    status: 201,
    events: [['_Role', 'create', 1]],
  },
  {
    name: 'add a member to a role',
    setup: async (v, t) => {
      v.role = await create(t, '/roles', { name: 'Members', ACL: {} });
      v.user = (await signUp(t, 'member1')).objectId;
    },
    method: 'PUT',
    path: '/roles/{role}',
    as: 'master',
    body: {
      users: {
        __op: 'AddRelation',
        objects: [{ __type: 'Pointer', className: '_User', objectId: '{user}' }],
      },
    },
    status: 200,
    events: [['_Role', 'update', 1]],
  },
  {
    name: 'register an installation',
    method: 'POST',
    path: '/installations',
    headers: { 'X-Backend-Installation-Id': 'inst-1' },
    body: { deviceType: 'ios', deviceToken: 't1' },
    status: 201,
    events: [['_Installation', 'create', 1]],
  },
  {
    name: 'update an installation from its device',
    setup: async (v, t) => {
      const res = await t.request('POST', '/installations', {
        headers: { 'X-Backend-Installation-Id': 'inst-2' },
        body: { deviceType: 'android' },
      });
      v.inst = res.json.objectId;
    },
    method: 'PUT',
    path: '/installations/{inst}',
    headers: { 'X-Backend-Installation-Id': 'inst-2' },
    body: { channels: ['news'] },
    status: 200,
    events: [['_Installation', 'update', 1]],
  },
  // ---- cloud code, webhooks, jobs ----
  {
    name: 'a cloud function writes through the pipeline (source cloud)',
    setup: async (v, t) => {
      await t.request('POST', '/schemas/Note', {
        as: 'master',
        body: { fields: { text: { type: 'String' } } },
      });
      v.token = (await signUp(t, 'cloudy')).sessionToken;
    },
    method: 'POST',
    path: '/functions/createNote',
    sessionToken: '{token}',
    body: { text: 'from cloud code' },
    status: 200,
    events: [['Note', 'create', 1]],
    source: 'cloud',
  },
  {
    name: 'register a function webhook',
    method: 'POST',
    path: '/hooks/functions',
    as: 'master',
    body: { functionName: 'remoteEvents', url: 'https://receiver.example/fn' },
    status: 201,
    events: [['_Hooks', 'create', 1]],
  },
  {
    name: 'change a webhook url',
    setup: async (_v, t) => {
      await t.request('POST', '/hooks/functions', {
        as: 'master',
        body: { functionName: 'moved', url: 'https://receiver.example/a' },
      });
    },
    method: 'PUT',
    path: '/hooks/functions/moved',
    as: 'master',
    body: { url: 'https://receiver.example/b' },
    status: 200,
    events: [['_Hooks', 'update', 1]],
  },
  {
    name: 'delete a webhook',
    setup: async (_v, t) => {
      await t.request('POST', '/hooks/functions', {
        as: 'master',
        body: { functionName: 'dropped', url: 'https://receiver.example/a' },
      });
    },
    method: 'DELETE',
    path: '/hooks/functions/dropped',
    as: 'master',
    status: 200,
    events: [['_Hooks', 'delete', 1]],
  },
  {
    name: 'run a job: its status row, then its progress and end',
    method: 'POST',
    path: '/jobs/countNotes',
    as: 'master',
    body: {},
    status: 200,
    events: [
      ['_JobStatus', 'create', 1],
      ['_JobStatus', 'update', 3],
    ],
    settle: async (_v, t) => {
      await t.service.jobs.runner.idle();
    },
  },
  {
    name: 'schedule a job',
    method: 'POST',
    path: '/classes/_JobSchedule',
    as: 'master',
    body: { jobName: 'countNotes', cron: '0 0 1 1 *' },
    status: 201,
    events: [['_JobSchedule', 'create', 1]],
  },
  // ---- config, schemas, purge ----
  {
    name: 'change the config',
    method: 'PUT',
    path: '/config',
    as: 'master',
    body: { params: { welcome: 'hi' } },
    status: 200,
    events: [['_GlobalConfig', 'update', 1]],
  },
  {
    name: 'create a class',
    method: 'POST',
    path: '/schemas/Made',
    as: 'master',
    body: { fields: { a: { type: 'String' } } },
    status: 200,
    events: [['_SCHEMA', 'create', 1]],
  },
  {
    name: 'change a class',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/Changed', { as: 'master', body: {} });
    },
    method: 'PUT',
    path: '/schemas/Changed',
    as: 'master',
    body: { fields: { b: { type: 'Number' } } },
    status: 200,
    events: [['_SCHEMA', 'update', 1]],
  },
  {
    name: 'drop an empty class',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/Dropped', { as: 'master', body: {} });
    },
    method: 'DELETE',
    path: '/schemas/Dropped',
    as: 'master',
    status: 200,
    events: [['_SCHEMA', 'delete', 1]],
  },
  {
    name: 'purge a class: one event for the class',
    setup: async (_v, t) => {
      await create(t, '/classes/Purged', { n: 1 });
      await create(t, '/classes/Purged', { n: 2 });
    },
    method: 'DELETE',
    path: '/purge/Purged',
    as: 'master',
    status: 200,
    events: [['Purged', 'purge', 1]],
  },
];

describe('every write route emits the pipeline’s events', () => {
  let t: TestService;
  const seen: WriteEvent[] = [];

  beforeAll(async () => {
    t = await startService({ requestComplexity: { batchRequestLimit: 100 }, cloud: EVENTS_CLOUD });
    t.service.core.events.subscribe((e) => seen.push(e));
    await create(t, '/classes/Post', { title: 'first' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const tally = (events: WriteEvent[]) => {
    const counts = new Map<string, number>();
    for (const e of events)
      counts.set(`${e.className} ${e.op}`, (counts.get(`${e.className} ${e.op}`) ?? 0) + 1);
    return Object.fromEntries([...counts].sort());
  };

  for (const row of rows) {
    it(row.name, async () => {
      const v: Vars = { code: totp.generate() };
      if (row.setup) await row.setup(v, t);
      // Setup's background work (mail) must not spill into the counted window.
      await new Promise((r) => setTimeout(r, 20));
      seen.length = 0;
      const body = row.body === undefined ? undefined : JSON.parse(fill(JSON.stringify(row.body), v));
      const res: TestResponse = await t.request(row.method, fill(row.path, v), {
        as: row.as,
        body,
        headers: row.headers,
        sessionToken: row.sessionToken ? fill(row.sessionToken, v) : undefined,
      });
      expect(res.status, res.text).toBe(row.status);
      if (row.settle) await row.settle(v, t);
      const expected = Object.fromEntries(
        row.events
          .filter(([, , n]) => n > 0)
          .map(([c, op, n]) => [`${c} ${op}`, n] as const)
          .sort(),
      );
      expect(tally(seen)).toEqual(expected);
      if (row.source) for (const e of seen) expect(e.source, `${e.className} ${e.op}`).toBe(row.source);
    });
  }

  it('an event carries the rows before and after, never an internal column', async () => {
    const u = await signUp(t, 'shape1', { email: 'shape1@example.com' });
    seen.length = 0;
    await t.request('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { password: 'pw2' },
    });
    const update = seen.find((e) => e.className === '_User' && e.op === 'update')!;
    expect(update.before).toMatchObject({
      objectId: u.objectId,
      username: 'shape1',
      email: 'shape1@example.com',
    });
    expect(update.after).toMatchObject({ objectId: u.objectId, username: 'shape1' });
    expect(update.caller).toMatchObject({ kind: 'user', user: { objectId: u.objectId } });
    const text = JSON.stringify(seen);
    expect(text).not.toContain('_hashed_password');
    expect(text).not.toContain('pw2');
    expect(text).not.toMatch(/scrypt/);
  });

  it('an event is published only once its transaction commits', async () => {
    const published: string[] = [];
    const off = t.service.core.events.subscribe((e) => published.push(`${e.className} ${e.op}`));
    const { store } = t.service.core;
    const { writes } = t.service.data;
    const { MASTER } = await import('../src/kernel/caller.ts');
    const ctx = { caller: MASTER, source: 'system' as const, context: {} };
    await store.transaction(async () => {
      await writes.create(ctx, 'Post', { title: 'in a transaction' });
      expect(published).toEqual([]);
    });
    expect(published).toEqual(['Post create']);
    published.length = 0;
    await expect(
      store.transaction(async () => {
        await writes.create(ctx, 'Post', { title: 'rolled back' });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(published).toEqual([]);
    off();
  });
});
