import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointer, type TestUser } from '../helpers/access-world.ts';
import { buildNoteWorld } from '../helpers/probe-worlds.ts';
import { runScenarios, type Scenario } from '../helpers/scenarios.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { logInUser, signUpUser } from '../helpers/users.ts';

async function signUp(t: TestService, body: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await t.request('POST', '/users', { body, headers });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${res.text}`);
  return res.json as { objectId: string; sessionToken: string };
}

const userPointer = (objectId: string) => ({ __type: 'Pointer', className: '_User', objectId });

const scenarios: Scenario[] = [
  {
    name: 'finding sessions needs a session token: 209',
    method: 'GET',
    path: '/sessions',
    status: 400,
    code: 209,
    errorContains: 'Session token required',
  },
  {
    name: '/classes/_Session without a token: 209 too',
    method: 'GET',
    path: '/classes/_Session',
    status: 400,
    code: 209,
  },
  {
    name: 'a user finds only their own sessions',
    method: 'GET',
    path: '/sessions',
    sessionToken: '{aliceToken}',
    status: 200,
    notContains: ['{bobToken}'],
    after: async (ctx, res) => {
      expect(res.json.results).toHaveLength(2);
      for (const s of res.json.results) expect(s.user.objectId).toBe(ctx.vars.alice);
    },
  },
  {
    name: 'a where naming another user is still rewritten to the caller’s sessions',
    method: 'GET',
    path: '/classes/_Session',
    sessionToken: '{aliceToken}',
    query: { where: { user: userPointer('{bob}') }, count: '1' },
    status: 200,
    expect: { results: [], count: 0 },
  },
  {
    name: 'a count is scoped too',
    method: 'GET',
    path: '/sessions',
    sessionToken: '{bobToken}',
    query: { count: '1', limit: '0' },
    status: 200,
    expect: { results: [], count: 2 },
  },
  {
    name: 'the master key sees every session',
    method: 'GET',
    path: '/sessions',
    as: 'master',
    query: { count: '1', limit: '0' },
    status: 200,
    expect: { count: 4 },
  },
  {
    name: 'another user’s session by id: 101',
    method: 'GET',
    path: '/sessions/{bobSession}',
    sessionToken: '{aliceToken}',
    status: 404,
    code: 101,
  },
  {
    name: 'another user’s session without an ACL by id: 101 as well',
    method: 'GET',
    path: '/classes/_Session/{openSession}',
    sessionToken: '{aliceToken}',
    status: 404,
    code: 101,
  },
  {
    name: 'deleting another user’s session: 101, it keeps working',
    method: 'DELETE',
    path: '/sessions/{bobSession}',
    sessionToken: '{aliceToken}',
    status: 404,
    code: 101,
    after: async (ctx) => {
      const me = await ctx.t.request('GET', '/users/me', { sessionToken: ctx.vars.bobToken });
      expect(me.status).toBe(200);
    },
  },
  {
    name: 'a user may not create sessions directly',
    method: 'POST',
    path: '/sessions',
    sessionToken: '{aliceToken}',
    body: { user: userPointer('{bob}'), sessionToken: 'r:11111111111111111111111111111111' },
    status: 403,
    code: 119,
    after: async (ctx) => {
      const me = await ctx.t.request('GET', '/users/me', {
        sessionToken: 'r:11111111111111111111111111111111',
      });
      expect(me.json.code).toBe(209);
    },
  },
  {
    name: 'a user may not update sessions directly',
    method: 'PUT',
    path: '/sessions/{bobSession}',
    sessionToken: '{bobToken}',
    body: { expiresAt: { __type: 'Date', iso: '2999-01-01T00:00:00.000Z' } },
    status: 403,
    code: 119,
  },
  {
    name: 'GET /sessions/me answers the caller’s session',
    method: 'GET',
    path: '/sessions/me',
    sessionToken: '{bobToken}',
    status: 200,
    expect: { createdWith: { action: 'signup', authProvider: 'password' } },
    after: async (ctx, res) => {
      expect(res.json.objectId).toBe(ctx.vars.bobSession);
      expect(res.json.sessionToken).toBe(ctx.vars.bobToken);
    },
  },
  {
    name: 'GET /sessions/me without a token: 209',
    method: 'GET',
    path: '/sessions/me',
    status: 400,
    code: 209,
  },
];

runScenarios('sessions: scoping', scenarios, {
  setup: async (ctx) => {
    const { t, vars } = ctx;
    const alice = await signUp(t, { username: 'alice', password: 'pw-a' });
    const bob = await signUp(t, { username: 'bob', password: 'pw-b' });
    const login = await t.request('POST', '/login', { body: { username: 'alice', password: 'pw-a' } });
    vars.alice = alice.objectId;
    vars.aliceToken = alice.sessionToken;
    vars.aliceToken2 = login.json.sessionToken;
    vars.bob = bob.objectId;
    vars.bobToken = bob.sessionToken;
    const me = await t.request('GET', '/sessions/me', { sessionToken: bob.sessionToken });
    vars.bobSession = me.json.objectId;
    // A session the master made without an ACL: only the query rewrite keeps it from alice.
    const open = await t.request('POST', '/classes/_Session', {
      as: 'master',
      body: { user: userPointer(bob.objectId), sessionToken: 'r:22222222222222222222222222222222' },
    });
    if (open.status !== 201) throw new Error(open.text);
    vars.openSession = open.json.objectId;
  },
});

describe('sessions: rows and lifetime', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ sessionLength: 2 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a session row holds user, token, expiresAt, installationId and createdWith', async () => {
    const before = Date.now();
    const user = await signUp(
      t,
      { username: 'carol', password: 'pw' },
      { 'X-Backend-Installation-Id': 'inst-1' },
    );
    const row = await t.request('GET', '/sessions/me', { sessionToken: user.sessionToken });
    expect(row.status, row.text).toBe(200);
    expect(row.json).toMatchObject({
      user: userPointer(user.objectId),
      sessionToken: user.sessionToken,
      installationId: 'inst-1',
      createdWith: { action: 'signup', authProvider: 'password' },
      ACL: { [user.objectId]: { read: true, write: true } },
    });
    expect(user.sessionToken).toMatch(/^r:[0-9a-f]{32}$/);
    const expires = Date.parse(row.json.expiresAt.iso);
    expect(expires).toBeGreaterThanOrEqual(before + 2000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 2000);
  });

  it('a login from the same installation replaces that installation’s earlier session', async () => {
    const user = await signUp(
      t,
      { username: 'dan', password: 'pw' },
      { 'X-Backend-Installation-Id': 'inst-2' },
    );
    const other = await t.request('POST', '/login', { body: { username: 'dan', password: 'pw' } });
    const again = await t.request('POST', '/login', {
      body: { username: 'dan', password: 'pw' },
      headers: { 'X-Backend-Installation-Id': 'inst-2' },
    });
    expect(again.status).toBe(200);
    expect((await t.request('GET', '/users/me', { sessionToken: user.sessionToken })).json.code).toBe(209);
    expect((await t.request('GET', '/users/me', { sessionToken: other.json.sessionToken })).status).toBe(200);
    const session = await t.request('GET', '/sessions/me', { sessionToken: again.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'login', authProvider: 'password' });
  });

  it('deleting one’s own session revokes it', async () => {
    const user = await signUp(t, { username: 'eve', password: 'pw' });
    const me = await t.request('GET', '/sessions/me', { sessionToken: user.sessionToken });
    const del = await t.request('DELETE', `/sessions/${me.json.objectId}`, {
      sessionToken: user.sessionToken,
    });
    expect(del.status, del.text).toBe(200);
    expect((await t.request('GET', '/users/me', { sessionToken: user.sessionToken })).json).toEqual({
      code: 209,
      error: 'Invalid session token',
    });
  });

  it('an expired token is refused with 209', async () => {
    const user = await signUp(t, { username: 'fay', password: 'pw' });
    expect((await t.request('GET', '/users/me', { sessionToken: user.sessionToken })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2100));
    const me = await t.request('GET', '/users/me', { sessionToken: user.sessionToken });
    expect(me.status).toBe(400);
    expect(me.json.code).toBe(209);
  });

  it('the token of a user the master deleted stops working', async () => {
    const user = await signUp(t, { username: 'gus', password: 'pw' });
    const del = await t.request('DELETE', `/users/${user.objectId}`, { as: 'master' });
    expect(del.status, del.text).toBe(200);
    expect((await t.request('GET', '/users/me', { sessionToken: user.sessionToken })).json.code).toBe(209);
  });

  it('a forged token of the right shape is refused', async () => {
    const res = await t.request('GET', '/sessions', { sessionToken: 'r:deadbeefdeadbeefdeadbeefdeadbeef' });
    expect(res.json.code).toBe(209);
  });
});

describe('sessions and login requests', () => {
  let t: TestService;
  let user: { objectId: string; sessionToken: string };
  let sessionId: string;
  const TOKEN_REQUIRED = { code: 209, error: 'Session token required: send X-Backend-Session-Token.' };

  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
    user = await signUpUser(t, 'sessioned', 'pw-s');
    const me = await t.request('GET', '/sessions/me', { sessionToken: user.sessionToken });
    expect(me.status, me.text).toBe(200);
    sessionId = me.json.objectId;
  });
  afterAll(async () => {
    await t?.close();
  });

  // GET /sessions without a token is pinned above. (No mutant of service.ts needs
  // this: the access decider of _Session gives the same refusal when the service's guard is gone.)
  it('reading and revoking a session by id without a session token: 209, nothing revoked', async () => {
    for (const [method, path] of [
      ['GET', `/sessions/${sessionId}`],
      ['GET', `/classes/_Session/${sessionId}`],
      ['DELETE', `/sessions/${sessionId}`],
      ['DELETE', `/classes/_Session/${sessionId}`],
    ] as const) {
      const res = await t.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.json, `${method} ${path}`).toEqual(TOKEN_REQUIRED);
    }
    const me = await t.request('GET', '/users/me', { sessionToken: user.sessionToken });
    expect(me.status, me.text).toBe(200);
    expect(me.json.objectId).toBe(user.objectId);
  });

  it('GET /sessions/me answers 209 once the session row is gone, even while the caller is cached', async () => {
    const login = await logInUser(t, 'sessioned', 'pw-s');
    const token = login.json.sessionToken as string;
    const me = await t.request('GET', '/sessions/me', { sessionToken: token });
    expect(me.status, me.text).toBe(200);
    // Deleted in the store itself, as another instance sharing it would: this instance's caller
    // cache still knows the token, so only the row lookup can tell.
    const { store, schemas } = t.service.core;
    expect(await store.delete(schemas.get('_Session')!, me.json.objectId)).not.toBeNull();
    const gone = await t.request('GET', '/sessions/me', { sessionToken: token });
    expect(gone.status, gone.text).toBe(400);
    expect(gone.json).toEqual({ code: 209, error: 'Invalid session token' });
  });

  it('a login by email works when the username is empty or not a string', async () => {
    const mailed = await t.request('POST', '/users', {
      body: { username: 'mailed', password: 'pw-m', email: 'Mailed@Example.com' },
    });
    expect(mailed.status, mailed.text).toBe(201);
    for (const username of ['', 7, ['mailed'], null]) {
      const res = await t.request('POST', '/login', {
        body: { username, email: 'MAILED@example.com', password: 'pw-m' },
      });
      expect(res.status, `${JSON.stringify(username)}: ${res.text}`).toBe(200);
      expect(res.json.objectId).toBe(mailed.json.objectId);
      expect(res.json.sessionToken).toMatch(/^r:/);
    }
  });

  it('the master key reads any session by id without a session token', async () => {
    for (const path of [`/sessions/${sessionId}`, `/classes/_Session/${sessionId}`]) {
      const res = await t.request('GET', path, { as: 'master' });
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({
        objectId: sessionId,
        sessionToken: user.sessionToken,
        user: { __type: 'Pointer', className: '_User', objectId: user.objectId },
      });
    }
  });

  it('a login without a usable name, or without a password, is refused with its own message', async () => {
    const NAME = { code: 200, error: 'username/email is required.' };
    const PASSWORD = { code: 201, error: 'password is required.' };
    const cases: Array<[Record<string, unknown>, unknown]> = [
      [{ password: 'pw-s' }, NAME],
      [{ username: '', password: 'pw-s' }, NAME],
      [{ email: '', password: 'pw-s' }, NAME],
      [{ email: 123, password: 'pw-s' }, NAME],
      [{ username: 7, email: ['sessioned'], password: 'pw-s' }, NAME],
      [{ username: 'sessioned' }, PASSWORD],
      [{ username: 'sessioned', password: '' }, PASSWORD],
      [{ username: 'sessioned', password: 42 }, PASSWORD],
    ];
    for (const [body, expected] of cases) {
      const res = await t.request('POST', '/login', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json, JSON.stringify(body)).toEqual(expected);
    }
  });

  it('authData sent as a string must be JSON: 107 on POST and GET /login', async () => {
    const INVALID = { code: 107, error: 'authData must be a JSON object.' };
    const post = await t.request('POST', '/login', {
      body: { username: 'sessioned', password: 'pw-s', authData: '{"mfa":' },
    });
    expect(post.status, post.text).toBe(400);
    expect(post.json).toEqual(INVALID);
    const get = await t.request('GET', '/login', {
      query: { username: 'sessioned', password: 'pw-s', authData: 'not json' },
    });
    expect(get.status, get.text).toBe(400);
    expect(get.json).toEqual(INVALID);
    // JSON authData is read: the same login with it as a string works.
    const ok = await t.request('GET', '/login', {
      query: { username: 'sessioned', password: 'pw-s', authData: '{}' },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.objectId).toBe(user.objectId);
  });
});

describe('sessions in a world of notes (buildNoteWorld)', () => {
  let t: TestService;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    ({ t, alice, bob } = await buildNoteWorld());
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('sessions are scoped to their user', () => {
    it('a where, $or or count cannot widen the session scope', async () => {
      for (const q of [
        { where: { user: pointer('_User', bob.id) } },
        { where: { $or: [{ user: pointer('_User', bob.id) }, { user: pointer('_User', alice.id) }] } },
        { count: 1 },
      ]) {
        const r = await t.request('GET', '/sessions', { sessionToken: alice.token, query: q });
        expect(r.status, r.text).toBe(200);
        expect(r.text).not.toContain(bob.token);
        for (const s of r.json.results) expect(s.user.objectId).toBe(alice.id);
        if ('count' in q) expect(r.json.count).toBe(1);
      }
      const anon = await t.request('GET', '/sessions', {});
      expect(anon.status, anon.text).toBe(400);
      expect(anon.json).toEqual({
        code: 209,
        error: 'Session token required: send X-Backend-Session-Token.',
      });
      expect(anon.text).not.toContain('r:');
    });
  });
});
