import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenarios, type Scenario } from '../helpers/scenarios.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';
import { logInUser } from '../helpers/users.ts';

type Vars = Record<string, string>;

async function signUp(t: TestService, body: Record<string, unknown>) {
  const res = await t.request('POST', '/users', { body });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${res.text}`);
  return res.json as { objectId: string; sessionToken: string };
}

async function userCount(t: TestService, where: Record<string, unknown> = {}): Promise<number> {
  const res = await t.request('GET', '/classes/_User', {
    as: 'master',
    query: { where, count: '1', limit: '0' },
  });
  return res.json.count as number;
}

const TOKEN = /^r:[0-9a-f]{32}$/;

const scenarios: Scenario[] = [
  // ---- sign-up: bad input changes nothing ----
  {
    name: 'sign-up without username: 200',
    method: 'POST',
    path: '/users',
    body: { password: 'pw' },
    status: 400,
    code: 200,
    after: async (ctx) => expect(await userCount(ctx.t)).toBe(3),
  },
  {
    name: 'sign-up without password: 201',
    method: 'POST',
    path: '/users',
    body: { username: 'nopass' },
    status: 400,
    code: 201,
    after: async (ctx) => expect(await userCount(ctx.t, { username: 'nopass' })).toBe(0),
  },
  {
    name: 'sign-up with a malformed email: 125',
    method: 'POST',
    path: '/users',
    body: { username: 'bademail', password: 'pw', email: 'not-an-email' },
    status: 400,
    code: 125,
    after: async (ctx) => expect(await userCount(ctx.t, { username: 'bademail' })).toBe(0),
  },
  {
    name: 'sign-up with a taken username in other case: 202',
    method: 'POST',
    path: '/users',
    body: { username: 'ALICE', password: 'pw' },
    status: 400,
    code: 202,
    errorContains: 'username',
    after: async (ctx) => expect(await userCount(ctx.t)).toBe(3),
  },
  {
    name: 'sign-up with a taken email in other case: 203',
    method: 'POST',
    path: '/users',
    body: { username: 'other', password: 'pw', email: 'Alice@Example.COM' },
    status: 400,
    code: 203,
    after: async (ctx) => expect(await userCount(ctx.t, { username: 'other' })).toBe(0),
  },
  {
    name: 'sign-up may not set sessionToken: 105',
    method: 'POST',
    path: '/users',
    body: { username: 'tok', password: 'pw', sessionToken: 'r:00000000000000000000000000000000' },
    status: 400,
    code: 105,
  },
  {
    name: 'a client may not set emailVerified: 119',
    method: 'POST',
    path: '/users',
    body: { username: 'verif', password: 'pw', emailVerified: true },
    status: 400,
    code: 119,
    after: async (ctx) => expect(await userCount(ctx.t, { username: 'verif' })).toBe(0),
  },
  {
    name: 'an unsupported authData provider: 252',
    method: 'POST',
    path: '/users',
    body: { username: 'fb', password: 'pw', authData: { facebook: { id: '1', access_token: 'x' } } },
    status: 400,
    code: 252,
    errorContains: 'unsupported',
  },
  // ---- the stored user ----
  {
    name: 'the row is ACL’d to the user itself, password never readable even by master',
    method: 'GET',
    path: '/classes/_User/{alice}',
    as: 'master',
    status: 200,
    expect: { username: 'alice', email: 'alice@example.com' },
    notContains: ['password', 'scrypt', '_hashed', 'secret-alice'],
    after: async (ctx, res) => {
      expect(res.json.ACL).toEqual({ [ctx.vars.alice!]: { read: true, write: true } });
    },
  },
  {
    name: 'a find on password matches nothing (no column holds it)',
    method: 'GET',
    path: '/classes/_User',
    as: 'master',
    query: { where: { password: { $exists: true } } },
    status: 200,
    expect: { results: [] },
  },
  {
    name: 'another user cannot read alice’s row (private ACL)',
    method: 'GET',
    path: '/users/{alice}',
    sessionToken: '{bobToken}',
    status: 404,
    code: 101,
  },
  // ---- login ----
  {
    name: 'POST /login answers the user with a new session token',
    method: 'POST',
    path: '/login',
    body: { username: 'Alice', password: 'secret-alice' },
    status: 200,
    expect: { username: 'alice', email: 'alice@example.com' },
    notContains: ['password', 'scrypt'],
    after: async (ctx, res) => {
      expect(res.json.sessionToken).toMatch(TOKEN);
      expect(res.json.sessionToken).not.toBe(ctx.vars.aliceToken);
      expect(res.json.objectId).toBe(ctx.vars.alice);
    },
  },
  {
    name: 'GET /login with query parameters',
    method: 'GET',
    path: '/login',
    query: { username: 'alice', password: 'secret-alice' },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.objectId).toBe(ctx.vars.alice);
      expect(res.json.sessionToken).toMatch(TOKEN);
    },
  },
  {
    name: 'login by email',
    method: 'POST',
    path: '/login',
    body: { email: 'ALICE@example.com', password: 'secret-alice' },
    status: 200,
    after: async (ctx, res) => expect(res.json.objectId).toBe(ctx.vars.alice),
  },
  {
    name: 'a wrong password: 101 Invalid username/password.',
    method: 'POST',
    path: '/login',
    body: { username: 'alice', password: 'wrong' },
    status: 404,
    code: 101,
    expect: { error: 'Invalid username/password.' },
  },
  {
    name: 'an unknown user: the same answer',
    method: 'POST',
    path: '/login',
    body: { username: 'nobody', password: 'secret-alice' },
    status: 404,
    code: 101,
    expect: { error: 'Invalid username/password.' },
  },
  {
    name: 'login without password: 201',
    method: 'POST',
    path: '/login',
    body: { username: 'alice' },
    status: 400,
    code: 201,
  },
  {
    name: 'login without username or email: 200',
    method: 'POST',
    path: '/login',
    body: { password: 'x' },
    status: 400,
    code: 200,
  },
  // ---- me ----
  {
    name: 'GET /users/me answers the own row in full with the token',
    method: 'GET',
    path: '/users/me',
    sessionToken: '{aliceToken}',
    status: 200,
    expect: { username: 'alice', email: 'alice@example.com' },
    notContains: ['password', 'scrypt'],
    after: async (ctx, res) => {
      expect(res.json.objectId).toBe(ctx.vars.alice);
      expect(res.json.sessionToken).toBe(ctx.vars.aliceToken);
    },
  },
  {
    name: 'GET /users/me without a token: 209',
    method: 'GET',
    path: '/users/me',
    status: 400,
    code: 209,
  },
  {
    name: 'GET /users/me with a bogus token: 209 Invalid session token',
    method: 'GET',
    path: '/users/me',
    sessionToken: 'r:0123456789abcdef0123456789abcdef',
    status: 400,
    code: 209,
    expect: { error: 'Invalid session token' },
  },
  // ---- updates ----
  {
    name: 'updating another user’s row: 206 and nothing changes',
    method: 'PUT',
    path: '/users/{bob}',
    sessionToken: '{aliceToken}',
    body: { username: 'hacked' },
    status: 400,
    code: 206,
    after: async (ctx, res) => {
      expect(res.json.error).toBe(`Insufficient auth to update user ${ctx.vars.bob}.`);
      expect(await userCount(ctx.t, { username: 'bob' })).toBe(1);
    },
  },
  {
    name: 'updating through /classes/_User without a token: 206',
    method: 'PUT',
    path: '/classes/_User/{bob}',
    body: { username: 'hacked' },
    status: 400,
    code: 206,
    after: async (ctx) => expect(await userCount(ctx.t, { username: 'hacked' })).toBe(0),
  },
  {
    name: 'deleting another user: 206, the row stays',
    method: 'DELETE',
    path: '/users/{bob}',
    sessionToken: '{aliceToken}',
    status: 400,
    code: 206,
    after: async (ctx) => expect(await userCount(ctx.t, { username: 'bob' })).toBe(1),
  },
  {
    name: 'a user renames themself: lowercased',
    method: 'PUT',
    path: '/users/{alice}',
    sessionToken: '{aliceToken}',
    body: { username: 'Alicia', email: 'Alicia@Example.com', nickname: 'Al' },
    status: 200,
    after: async (ctx) => {
      const me = await ctx.t.request('GET', '/users/me', { sessionToken: ctx.vars.aliceToken });
      expect(me.json).toMatchObject({ username: 'alicia', email: 'alicia@example.com', nickname: 'Al' });
    },
  },
  {
    name: 'renaming to a taken username: 202, nothing changes',
    method: 'PUT',
    path: '/users/{alice}',
    sessionToken: '{aliceToken}',
    body: { username: 'BOB', nickname: 'changed' },
    status: 400,
    code: 202,
    after: async (ctx) => {
      const me = await ctx.t.request('GET', '/users/me', { sessionToken: ctx.vars.aliceToken });
      expect(me.json).toMatchObject({ username: 'alicia', nickname: 'Al' });
    },
  },
  {
    name: 'changing email to a taken one: 203',
    method: 'PUT',
    path: '/users/{alice}',
    sessionToken: '{aliceToken}',
    body: { email: 'BOB@example.com' },
    status: 400,
    code: 203,
  },
  {
    name: 'an update with a malformed email: 125',
    method: 'PUT',
    path: '/users/{alice}',
    sessionToken: '{aliceToken}',
    body: { email: 'nope' },
    status: 400,
    code: 125,
  },
  {
    name: 'a client may not set emailVerified on update: 119',
    method: 'PUT',
    path: '/users/{alice}',
    sessionToken: '{aliceToken}',
    body: { emailVerified: true },
    status: 400,
    code: 119,
  },
  {
    name: 'authData is stripped from non-master reads, master sees it',
    method: 'GET',
    path: '/users/{anon}',
    sessionToken: '{anonToken}',
    status: 200,
    after: async (ctx, res) => {
      expect(res.json).not.toHaveProperty('authData');
      const master = await ctx.t.request('GET', `/users/${ctx.vars.anon}`, { as: 'master' });
      expect(master.json.authData).toEqual({ anonymous: { id: 'anon-users-test' } });
    },
  },
  {
    name: 'serverInfo announces users',
    method: 'GET',
    path: '/serverInfo',
    status: 200,
    expect: { features: { users: true } },
  },
];

runScenarios('users: sign-up, login, me, updates', scenarios, {
  setup: async (ctx) => {
    const { t, vars } = ctx;
    const alice = await signUp(t, {
      username: 'Alice',
      password: 'secret-alice',
      email: 'Alice@Example.com',
    });
    const bob = await signUp(t, { username: 'bob', password: 'secret-bob', email: 'bob@example.com' });
    Object.assign(vars, {
      alice: alice.objectId,
      aliceToken: alice.sessionToken,
      bob: bob.objectId,
      bobToken: bob.sessionToken,
    } satisfies Vars);
    const anon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'anon-users-test' } } },
    });
    vars.anon = anon.json.objectId;
    vars.anonToken = anon.json.sessionToken;
  },
});

describe('users: flows', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sign-up answers 201 with objectId, createdAt, sessionToken and a Location; the alias /classes/_User signs up too', async () => {
    const res = await t.request('POST', '/classes/_User', {
      body: { username: 'Carol', password: 'pw-carol', email: 'CAROL@example.com', age: 30 },
    });
    expect(res.status, res.text).toBe(201);
    // As the incumbent answers: the fields sent are not echoed, only those the service changed.
    expect(res.json).toMatchObject({ username: 'carol', email: 'carol@example.com' });
    expect(res.json.age).toBeUndefined();
    expect(res.json.ACL).toBeUndefined();
    expect(res.json.objectId).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(typeof res.json.createdAt).toBe('string');
    expect(res.json.sessionToken).toMatch(TOKEN);
    expect(res.text).not.toContain('pw-carol');
    expect(res.text).not.toContain('password');
    expect(res.headers.get('location')).toContain(res.json.objectId);
    const me = await t.request('GET', '/users/me', { sessionToken: res.json.sessionToken });
    expect(me.json.objectId).toBe(res.json.objectId);
  });

  it('the SQL unique index decides concurrent sign-ups of one name: one 201, the rest 202', async () => {
    const answers = await Promise.all(
      ['race', 'RACE', 'Race'].map((username) =>
        t.request('POST', '/users', { body: { username, password: 'pw' } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 400, 400]);
    for (const a of answers.filter((x) => x.status === 400)) expect(a.json.code).toBe(202);
    expect(await userCount(t, { username: 'race' })).toBe(1);
  });

  it('logout ends the session: GET /users/me then answers 209', async () => {
    const login = await logInUser(t, 'carol', 'pw-carol');
    const token = login.json.sessionToken as string;
    expect((await t.request('GET', '/users/me', { sessionToken: token })).status).toBe(200);
    const out = await t.request('POST', '/logout', { sessionToken: token });
    expect(out.status, out.text).toBe(200);
    expect(out.json).toEqual({});
    const me = await t.request('GET', '/users/me', { sessionToken: token });
    expect(me.status).toBe(400);
    expect(me.json).toEqual({ code: 209, error: 'Invalid session token' });
  });

  it('changing the password revokes the other sessions and keeps the current one', async () => {
    const user = await signUp(t, { username: 'dave', password: 'old-pw' });
    const other = (await logInUser(t, 'dave', 'old-pw')).json.sessionToken as string;
    const res = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { password: 'new-pw' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.text).not.toContain('new-pw');
    expect((await t.request('GET', '/users/me', { sessionToken: user.sessionToken })).status).toBe(200);
    expect((await t.request('GET', '/users/me', { sessionToken: other })).json.code).toBe(209);
    expect((await logInUser(t, 'dave', 'old-pw')).json.code).toBe(101);
    expect((await logInUser(t, 'dave', 'new-pw')).status).toBe(200);
    const empty = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { password: '' },
    });
    expect(empty.json.code).toBe(201);
  });

  it('a user deletes themself; their sessions end with the row', async () => {
    const user = await signUp(t, { username: 'erin', password: 'pw' });
    const del = await t.request('DELETE', `/users/${user.objectId}`, { sessionToken: user.sessionToken });
    expect(del.status, del.text).toBe(200);
    expect(await userCount(t, { username: 'erin' })).toBe(0);
    expect((await t.request('GET', '/users/me', { sessionToken: user.sessionToken })).json.code).toBe(209);
    const sessions = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { user: { __type: 'Pointer', className: '_User', objectId: user.objectId } } },
    });
    expect(sessions.json.results).toEqual([]);
  });

  it('a wrong password and an unknown user take about the same time', async () => {
    const time = async (username: string) => {
      const start = performance.now();
      const res = await logInUser(t, username, 'definitely-wrong');
      expect(res.json).toEqual({ code: 101, error: 'Invalid username/password.' });
      return performance.now() - start;
    };
    await time('carol');
    let known = 0;
    let unknown = 0;
    for (let i = 0; i < 3; i++) {
      known += await time('carol');
      unknown += await time(`ghost${i}`);
    }
    // Both spend one scrypt derivation; without the dummy work the unknown name would answer at once.
    expect(unknown).toBeGreaterThan(known * 0.5);
    expect(unknown).toBeLessThan(known * 2);
  });
});

describe('users: anonymous users and the upgrade', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  const anonymous = (id: string) =>
    t.request('POST', '/users', { body: { authData: { anonymous: { id } } } });

  it('an anonymous sign-up gets a random username and a session; the same id logs in again', async () => {
    const first = await anonymous('3f1c9a7e-0000-4000-8000-000000000001');
    expect(first.status, first.text).toBe(201);
    expect(first.json.username).toMatch(/^[a-z0-9]{25}$/);
    expect(first.json.sessionToken).toMatch(TOKEN);
    // The sign-up answer does not echo authData (the incumbent's); the stored row holds it.
    expect(first.json.authData).toBeUndefined();
    const row = await t.request('GET', `/users/${first.json.objectId}`, { as: 'master' });
    expect(row.json.authData).toEqual({ anonymous: { id: '3f1c9a7e-0000-4000-8000-000000000001' } });
    const again = await anonymous('3f1c9a7e-0000-4000-8000-000000000001');
    expect(again.status, again.text).toBe(200);
    expect(again.json.objectId).toBe(first.json.objectId);
    expect(again.json.sessionToken).toMatch(TOKEN);
    expect(again.json.sessionToken).not.toBe(first.json.sessionToken);
    const session = await t.request('GET', '/sessions/me', { sessionToken: first.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'signup', authProvider: 'anonymous' });
    const bad = await t.request('POST', '/users', { body: { authData: { anonymous: { id: 42 } } } });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(111);
  });

  it('the upgrade with the unlink rotates the token; the anonymous id no longer reaches the account', async () => {
    const anon = await anonymous('3f1c9a7e-0000-4000-8000-000000000002');
    const id = anon.json.objectId as string;
    const oldToken = anon.json.sessionToken as string;
    const other = await anonymous('3f1c9a7e-0000-4000-8000-000000000003');
    const denied = await t.request('PUT', `/users/${id}`, {
      sessionToken: other.json.sessionToken,
      body: { username: 'frank', password: 'pw-frank', authData: { anonymous: null } },
    });
    expect(denied.json).toEqual({ code: 206, error: `Insufficient auth to update user ${id}.` });

    const up = await t.request('PUT', `/users/${id}`, {
      sessionToken: oldToken,
      body: {
        username: 'Frank',
        password: 'pw-frank',
        email: 'frank@example.com',
        authData: { anonymous: null },
      },
    });
    expect(up.status, up.text).toBe(200);
    expect(up.json.sessionToken).toMatch(TOKEN);
    expect(up.json.sessionToken).not.toBe(oldToken);
    expect((await t.request('GET', '/users/me', { sessionToken: oldToken })).json.code).toBe(209);
    const me = await t.request('GET', '/users/me', { sessionToken: up.json.sessionToken });
    expect(me.json).toMatchObject({ objectId: id, username: 'frank', email: 'frank@example.com' });
    expect(me.json.authData ?? {}).not.toHaveProperty('anonymous');
    const session = await t.request('GET', '/sessions/me', { sessionToken: up.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'upgrade', authProvider: 'password' });
    expect((await logInUser(t, 'frank', 'pw-frank')).json.objectId).toBe(id);
    // The id is free again: it makes a new anonymous user.
    const reuse = await anonymous('3f1c9a7e-0000-4000-8000-000000000002');
    expect(reuse.status).toBe(201);
    expect(reuse.json.objectId).not.toBe(id);
  });

  it('without the unlink the anonymous id remains a login path to the named account', async () => {
    const anon = await anonymous('3f1c9a7e-0000-4000-8000-000000000004');
    const id = anon.json.objectId as string;
    const up = await t.request('PUT', `/users/${id}`, {
      sessionToken: anon.json.sessionToken,
      body: { username: 'grace', password: 'pw-grace', email: 'grace@example.com' },
    });
    expect(up.status, up.text).toBe(200);
    expect(up.json.sessionToken).toMatch(TOKEN);
    expect((await t.request('GET', '/users/me', { sessionToken: anon.json.sessionToken })).json.code).toBe(
      209,
    );
    const again = await anonymous('3f1c9a7e-0000-4000-8000-000000000004');
    expect(again.status, again.text).toBe(200);
    expect(again.json).toMatchObject({ objectId: id, username: 'grace' });
  });

  it('a client cannot link an anonymous id another user holds (208); its own new one it may (issue 29)', async () => {
    const victim = await anonymous('steal-me');
    const user = await signUp(t, { username: 'heidi', password: 'pw' });
    const res = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { authData: { anonymous: { id: 'steal-me' } } },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 208, error: 'this auth is already used' });
    const again = await anonymous('steal-me');
    expect(again.json.objectId).toBe(victim.json.objectId);
    // Linking an id nobody holds is the SDKs' linkWith('anonymous', …): allowed.
    const own = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { authData: { anonymous: { id: 'heidi-own' } } },
    });
    expect(own.status, own.text).toBe(200);
  });
});

describe('users: the stock Parse JS SDK', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('signs up, logs in, becomes, saves itself, logs out; anonymous login works', async () => {
    const { default: ParseSDK } = await import('parse/node');
    const Parse = ParseSDK as typeof ParseSDK & { initialize(appId: string, jsKey: string): void };
    Parse.initialize(KEYS.appId, KEYS.javascriptKey);
    Parse.serverURL = t.url;
    Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
    // In Node the SDK keeps no current user unless told to (as it does in a browser).
    Parse.User.enableUnsafeCurrentUser();

    const user = new Parse.User();
    user.set('username', 'SdkUser');
    user.set('password', 'sdk-pw');
    user.set('email', 'sdk@example.com');
    await user.signUp();
    expect(user.id).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(user.getSessionToken()).toMatch(TOKEN);
    await Parse.User.logOut();

    const logged = await Parse.User.logIn('sdkuser', 'sdk-pw');
    expect(logged.id).toBe(user.id);
    expect(logged.get('username')).toBe('sdkuser');
    logged.set('nickname', 'S');
    await logged.save();
    const token = logged.getSessionToken()!;
    const again = await Parse.User.become(token);
    expect(again.get('nickname')).toBe('S');
    await expect(Parse.User.logIn('sdkuser', 'wrong')).rejects.toMatchObject({
      code: 101,
      message: 'Invalid username/password.',
    });
    await Parse.User.logOut();
    expect((await t.request('GET', '/users/me', { sessionToken: token })).json.code).toBe(209);

    const anon = await Parse.AnonymousUtils.logIn();
    expect(anon.id).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(Parse.AnonymousUtils.isLinked(anon)).toBe(true);
    await Parse.User.logOut();
  });
});
