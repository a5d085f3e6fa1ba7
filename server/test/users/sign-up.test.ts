import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { BAD_ANON, BAD_AUTHDATA, BAD_EMAIL, BAD_USERNAME, NOT_OBJECT, refusal } from '../helpers/users.ts';

/**
 * Sign-up (POST /users): the checks of the request with their exact messages, anonymous sign-ups,
 * the ACL a new user gets, the uniqueness races at the unique index, and batch sign-ups.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

describe('sign-up checks', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const signUp = (body: unknown, as?: 'master') => t.request('POST', '/users', { body, as });

  it('refuses a body that is not an object, and authData that is not an object', async () => {
    for (const body of [[1, 2], 'text', 42]) {
      const res = await signUp(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json).toEqual(NOT_OBJECT);
    }
    for (const authData of ['x', 5, [1]]) {
      const res = await signUp({ username: 'ad-bad', password: 'pw', authData });
      expect(res.status, JSON.stringify(authData)).toBe(400);
      expect(res.json).toEqual(BAD_AUTHDATA);
    }
  });

  it('names what is missing or wrong', async () => {
    expect((await signUp({ password: 'pw' })).json).toEqual(BAD_USERNAME);
    expect((await signUp({ username: '   ', password: 'pw' })).json).toEqual(BAD_USERNAME);
    expect((await signUp({ username: 'no-pw' })).json).toEqual(refusal(201, 'password is required'));
    expect((await signUp({ username: 'st', password: 'pw', sessionToken: 'x' })).json).toEqual(
      refusal(105, 'sessionToken cannot be written.'),
    );
    expect((await signUp({ username: 'ev', password: 'pw', emailVerified: true })).json).toEqual(
      refusal(119, "Clients aren't allowed to manually update email verification."),
    );
    expect((await signUp({ username: 'em', password: 'pw', email: 'not-an-email' })).json).toEqual(BAD_EMAIL);
  });

  it('a taken email is 203 with its message', async () => {
    expect((await signUp({ username: 'first-e', password: 'pw', email: 'taken@example.com' })).status).toBe(
      201,
    );
    const res = await signUp({ username: 'second-e', password: 'pw', email: 'Taken@example.com' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(refusal(203, 'Account already exists for this email address.'));
  });

  it('an anonymous id must be a string of 1 to 256 characters', async () => {
    for (const anonymous of [{ id: '' }, { id: 'x'.repeat(257) }, { id: 7 }, 'id', null]) {
      const res = await signUp({ authData: { anonymous } });
      expect(res.status, JSON.stringify(anonymous)).toBe(400);
      expect(res.json).toEqual(BAD_ANON);
    }
    for (const id of ['a', 'y'.repeat(256)]) {
      const res = await signUp({ authData: { anonymous: { id } } });
      expect(res.status, res.text).toBe(201);
    }
  });

  it('an anonymous sign-up keeps the username it sends; without one it gets a generated lower-case one', async () => {
    const named = await signUp({ username: 'Anon-Named', authData: { anonymous: { id: 'anon-named-1' } } });
    expect(named.status, named.text).toBe(201);
    expect(named.json.username).toBe('anon-named');
    const plain = await signUp({ authData: { anonymous: { id: 'anon-plain-1' } } });
    expect(plain.json.username).toMatch(/^[0-9a-z]{25}$/);
  });

  it('the same anonymous id logs in again: a session created with {action: login, authProvider: anonymous}', async () => {
    const first = await signUp({ authData: { anonymous: { id: 'anon-again-1' } } });
    expect(first.status).toBe(201);
    const again = await signUp({ authData: { anonymous: { id: 'anon-again-1' } } });
    expect(again.status, again.text).toBe(200);
    expect(again.json.objectId).toBe(first.json.objectId);
    const session = await t.request('GET', '/sessions/me', { sessionToken: again.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'login', authProvider: 'anonymous' });
    const created = await t.request('GET', '/sessions/me', { sessionToken: first.json.sessionToken });
    expect(created.json.createdWith).toEqual({ action: 'signup', authProvider: 'anonymous' });
  });

  it('the master key may sign up with another provider; a client may not', async () => {
    const client = await signUp({ username: 'prov-c', password: 'pw', authData: { custom: { id: 'c1' } } });
    expect(client.json).toEqual(refusal(252, 'This authentication method is unsupported.'));
    const master = await signUp(
      { username: 'prov-m', password: 'pw-prov-m', authData: { custom: { id: 'm1' } } },
      'master',
    );
    expect(master.status, master.text).toBe(201);
    const login = await t.request('POST', '/login', { body: { username: 'prov-m', password: 'pw-prov-m' } });
    expect(login.status, login.text).toBe(200);
    expect(login.json.authData).toEqual({ custom: { id: 'm1' } });
  });

  it("an ACL object sent at sign-up keeps its entries and gains the user's own read and write", async () => {
    const res = await signUp({ username: 'acl-user', password: 'pw', ACL: { '*': { read: true } } });
    expect(res.status, res.text).toBe(201);
    const row = await t.request('GET', `/users/${res.json.objectId}`, { as: 'master' });
    expect(row.json.ACL).toEqual({ '*': { read: true }, [res.json.objectId]: { read: true, write: true } });
  });

  /**
   * A concurrent sign-up that wins between the uniqueness check and the insert: simulated by a
   * uniqueness check that misses the taken name once; the unique index then refuses the insert,
   * and the answer still names what is taken (202/203), not the raw duplicate error.
   */
  function missOnce(field: 'username' | 'email', value: string) {
    const lookups = t.service.data.lookups;
    const real = lookups.internal.bind(lookups);
    let misses = 1;
    vi.spyOn(lookups, 'internal').mockImplementation(async (className, column, v, columns) => {
      if (column === field && v === value && misses-- > 0) return [];
      return real(className, column, v, columns);
    });
  }

  it('a sign-up that loses the race at the unique index is answered 202 or 203', async () => {
    expect((await signUp({ username: 'dup-name', password: 'pw', email: 'dup1@example.com' })).status).toBe(
      201,
    );
    missOnce('username', 'dup-name');
    const name = await signUp({ username: 'dup-name', password: 'pw', email: 'dup2@example.com' });
    expect(name.status, name.text).toBe(400);
    expect(name.json).toEqual(refusal(202, 'Account already exists for this username.'));
    vi.restoreAllMocks();
    missOnce('email', 'dup1@example.com');
    const mail = await signUp({ username: 'dup-other', password: 'pw', email: 'dup1@example.com' });
    expect(mail.json).toEqual(refusal(203, 'Account already exists for this email address.'));
    vi.restoreAllMocks();
    const login = await t.request('POST', '/login', { body: { username: 'dup-other', password: 'pw' } });
    expect(login.json).toEqual(refusal(101, 'Invalid username/password.'));
  });

  it('another write error is answered as itself, even when the name is taken meanwhile', async () => {
    missOnce('username', 'dup-name');
    const res = await signUp({ username: 'dup-name', password: 'pw', ACL: 'not-an-acl' });
    expect(res.status, res.text).toBe(400);
    expect(res.json).toEqual({ code: 123, error: 'ACL must be an object of principal -> {read, write}.' });
  });

  it('an update that loses the race at the unique index is answered 202', async () => {
    const u = await signUp({ username: 'dup-upd', password: 'pw' });
    missOnce('username', 'dup-name');
    const res = await t.request('PUT', `/users/${u.json.objectId}`, {
      sessionToken: u.json.sessionToken,
      body: { username: 'dup-name' },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.json).toEqual(refusal(202, 'Account already exists for this username.'));
    vi.restoreAllMocks();
    const me = await t.request('GET', '/users/me', { sessionToken: u.json.sessionToken });
    expect(me.json.username).toBe('dup-upd');
  });

  it.each([
    [
      'concurrent sign-ups with one username: one account, the other 202',
      {
        body: (i: number) => ({ username: 'racer', password: `pw-${i}`, email: `racer${i}@example.com` }),
        refused: refusal(202, 'Account already exists for this username.'),
      },
    ],
    [
      'concurrent sign-ups with one email: one account, the other 203',
      {
        body: (i: number) => ({ username: `mailracer${i}`, password: 'pw', email: 'mailrace@example.com' }),
        refused: refusal(203, 'Account already exists for this email address.'),
      },
    ],
  ])('%s', async (_name, { body, refused }) => {
    const results = await Promise.all([1, 2, 3].map((i) => signUp(body(i))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 400, 400]);
    for (const r of results.filter((x) => x.status === 400)) {
      expect(r.json).toEqual(refused);
    }
  });
});

describe('sign-up and updates in a batch', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sign-up and updates in a batch lowercase username and email and keep them unique', async () => {
    const res = await t.request('POST', '/batch', {
      body: {
        requests: [
          {
            method: 'POST',
            path: '/api/users',
            body: { username: 'RvBatch', password: 'pw', email: 'RvB@Example.COM' },
          },
          { method: 'POST', path: '/classes/_User', body: { username: 'rvbatch', password: 'pw' } },
          {
            method: 'POST',
            path: '/users',
            body: { username: 'other', password: 'pw', email: 'rvb@example.com' },
          },
        ],
      },
    });
    expect(res.json[0].success).toMatchObject({ username: 'rvbatch', email: 'rvb@example.com' });
    expect(res.json[0].success).not.toHaveProperty('password');
    expect(res.json[1].error.code).toBe(202);
    expect(res.json[2].error.code).toBe(203);
    const id = res.json[0].success.objectId as string;
    const put = await t.request('POST', '/batch', {
      sessionToken: res.json[0].success.sessionToken,
      body: {
        requests: [
          { method: 'PUT', path: `/classes/_User/${id}`, body: { username: 'RvMixed', email: 'RvM@Y.com' } },
        ],
      },
    });
    expect(put.json[0].success).toBeDefined();
    const row = await t.request('GET', `/classes/_User/${id}`, { as: 'master' });
    expect(row.json).toMatchObject({ username: 'rvmixed', email: 'rvm@y.com' });
  });
});
