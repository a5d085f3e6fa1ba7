import { createHash } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BdsError, ErrorCode } from '../src/kernel/errors.ts';
import { COL, escapeHtml, Users } from '../src/users/service.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * More behaviour the mutation run of the users service outside its session and login code
 * (issue 10) found unpinned: the background mail work, sign-up and update checks with their exact
 * messages, authData changes by the master key, the anonymous upgrade's session rotation, what an
 * email change does (and what other updates leave alone), deletes, uniqueness races, and the
 * mail-link flows. Each test pins the exact status, code and message.
 */

interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

async function mailbox(t: TestService): Promise<Mail[]> {
  const res = await t.request('GET', '/devMailbox', { as: 'master' });
  if (res.status !== 200) throw new Error(res.text);
  return res.json.results as Mail[];
}

async function waitForMail(t: TestService, to: string, n = 1): Promise<Mail> {
  for (let i = 0; i < 150; i++) {
    const mails = (await mailbox(t)).filter((m) => m.to === to);
    if (mails.length >= n) return mails[n - 1]!;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail #${n} to ${to}`);
}

/** Mail goes out after the answer: give the background work time before checking absence. */
const settle = () => new Promise((r) => setTimeout(r, 200));

const tokenIn = (mail: Mail, page: string): string => {
  const m = new RegExp(`/apps/[^/\\s]+/${page}\\?token=([0-9a-f]{64})`).exec(mail.text);
  if (!m) throw new Error(`no ${page} link in: ${mail.text}`);
  return m[1]!;
};

function postForm(url: string, fields: Record<string, string>) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

function newTotp() {
  const secret = new Secret({ size: 20 }).base32;
  const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return { secret, code: () => totp.generate() };
}

const err = (code: number, error: string) => ({ code, error });
const NOT_OBJECT = err(107, 'The request body must be a JSON object.');
const BAD_USERNAME = err(200, 'bad or missing username');
const BAD_EMAIL = err(125, 'Email address format is invalid.');
const BAD_AUTHDATA = err(111, 'authData must be an object.');
const BAD_ANON = err(111, 'authData.anonymous needs an id (a client-generated UUID).');

afterEach(() => {
  vi.restoreAllMocks();
});

describe('background mail work', () => {
  let t: TestService;
  let users: Users;
  beforeAll(async () => {
    t = await startService();
    users = new Users(t.service.data, { send: async () => {} }, () => 'http://x');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('idle() waits for the work still running, also work started while it waits', async () => {
    const done: string[] = [];
    const later = (name: string, ms: number, next?: () => void) => async () => {
      await new Promise((r) => setTimeout(r, ms));
      done.push(name);
      next?.();
    };
    users.background(later('first', 30, () => users.background(later('second', 30))));
    await users.idle();
    expect(done).toEqual(['first', 'second']);
  });

  it('inside a transaction the work starts only after the commit', async () => {
    const done: string[] = [];
    await t.service.data.core.store.transaction(async () => {
      users.background(async () => {
        done.push('ran');
      });
      await new Promise((r) => setTimeout(r, 20));
      expect(done).toEqual([]);
    });
    await users.idle();
    expect(done).toEqual(['ran']);
  });

  it('a failed task is logged with its message only; a non-Error as "error"', async () => {
    const logged = vi.spyOn(t.service.data.core.log, 'error').mockImplementation(() => undefined);
    users.background(async () => {
      throw new Error('smtp down for a@example.com');
    });
    await users.idle();
    expect(logged).toHaveBeenCalledWith(
      { err: 'smtp down for a@example.com' },
      'background mail task failed',
    );
    logged.mockClear();
    users.background(() => Promise.reject('a string'));
    await users.idle();
    expect(logged).toHaveBeenCalledWith({ err: 'error' }, 'background mail task failed');
  });

  it('escapeHtml writes each of & < > " \' as a numeric entity', () => {
    expect(escapeHtml(`a&b<c>d"e'f`)).toBe('a&#38;b&#60;c&#62;d&#34;e&#39;f');
  });

  it('the verification mail escapes the username in its HTML; the stored token is the hex SHA-256 of the link', async () => {
    const t2 = await startService({ verifyUserEmails: true });
    try {
      const res = await t2.request('POST', '/users', {
        body: { username: 'a<b&c', password: 'pw-html-1', email: 'html@example.com' },
      });
      expect(res.status, res.text).toBe(201);
      const mail = await waitForMail(t2, 'html@example.com');
      expect(mail.html).toContain('<p>Hi a&#60;b&#38;c,</p>');
      expect(mail.text).toContain('Hi a<b&c,');
      const token = tokenIn(mail, 'verify_email');
      const [row] = await t2.service.data.lookups.internal('_User', 'objectId', res.json.objectId, [
        COL.verifyToken,
      ]);
      expect(row![COL.verifyToken]).toBe(createHash('sha256').update(token).digest('hex'));
    } finally {
      await t2.close();
    }
  });
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
    expect((await signUp({ username: 'no-pw' })).json).toEqual(err(201, 'password is required'));
    expect((await signUp({ username: 'st', password: 'pw', sessionToken: 'x' })).json).toEqual(
      err(105, 'sessionToken cannot be written.'),
    );
    expect((await signUp({ username: 'ev', password: 'pw', emailVerified: true })).json).toEqual(
      err(119, "Clients aren't allowed to manually update email verification."),
    );
    expect((await signUp({ username: 'em', password: 'pw', email: 'not-an-email' })).json).toEqual(BAD_EMAIL);
  });

  it('a taken email is 203 with its message', async () => {
    expect((await signUp({ username: 'first-e', password: 'pw', email: 'taken@example.com' })).status).toBe(
      201,
    );
    const res = await signUp({ username: 'second-e', password: 'pw', email: 'Taken@example.com' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(err(203, 'Account already exists for this email address.'));
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
    expect(client.json).toEqual(err(252, 'This authentication method is unsupported.'));
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
    expect(name.json).toEqual(err(202, 'Account already exists for this username.'));
    vi.restoreAllMocks();
    missOnce('email', 'dup1@example.com');
    const mail = await signUp({ username: 'dup-other', password: 'pw', email: 'dup1@example.com' });
    expect(mail.json).toEqual(err(203, 'Account already exists for this email address.'));
    vi.restoreAllMocks();
    const login = await t.request('POST', '/login', { body: { username: 'dup-other', password: 'pw' } });
    expect(login.json).toEqual(err(101, 'Invalid username/password.'));
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
    expect(res.json).toEqual(err(202, 'Account already exists for this username.'));
    vi.restoreAllMocks();
    const me = await t.request('GET', '/users/me', { sessionToken: u.json.sessionToken });
    expect(me.json.username).toBe('dup-upd');
  });

  it('concurrent sign-ups with one username: one account, the other 202', async () => {
    const results = await Promise.all(
      [1, 2, 3].map((i) =>
        signUp({ username: 'racer', password: `pw-${i}`, email: `racer${i}@example.com` }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 400, 400]);
    for (const r of results.filter((x) => x.status === 400)) {
      expect(r.json).toEqual(err(202, 'Account already exists for this username.'));
    }
  });

  it('concurrent sign-ups with one email: one account, the other 203', async () => {
    const results = await Promise.all(
      [1, 2, 3].map((i) =>
        signUp({ username: `mailracer${i}`, password: 'pw', email: 'mailrace@example.com' }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 400, 400]);
    for (const r of results.filter((x) => x.status === 400)) {
      expect(r.json).toEqual(err(203, 'Account already exists for this email address.'));
    }
  });
});

describe('updates and deletes', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12, accountLockout: { threshold: 3, duration: 600 } });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function signUp(username: string, extra: Record<string, unknown> = {}) {
    const res = await t.request('POST', '/users', { body: { username, password: 'pw-start', ...extra } });
    expect(res.status, res.text).toBe(201);
    return res.json as { objectId: string; sessionToken: string };
  }
  const put = (id: string, body: unknown, sessionToken?: string) =>
    t.request('PUT', `/users/${id}`, sessionToken ? { sessionToken, body } : { as: 'master', body });

  it('refuses what is not an object, an unknown user, and bad password, username and authData values', async () => {
    const u = await signUp('upd-checks');
    for (const raw of ['[1]', '"x"', '3']) {
      const res = await t.request('PUT', `/users/${u.objectId}`, {
        sessionToken: u.sessionToken,
        rawBody: raw,
        headers: { 'Content-Type': 'application/json' },
      });
      expect(res.status, raw).toBe(400);
      expect(res.json).toEqual(NOT_OBJECT);
    }
    const missing = await put('nosuchuser1', { name: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual(err(101, 'Object not found.'));
    for (const password of [42, '', null, true]) {
      const res = await put(u.objectId, { password }, u.sessionToken);
      expect(res.json, JSON.stringify(password)).toEqual(err(201, 'password cannot be empty.'));
    }
    for (const username of [42, '', '  ', null]) {
      const res = await put(u.objectId, { username }, u.sessionToken);
      expect(res.json, JSON.stringify(username)).toEqual(BAD_USERNAME);
    }
    for (const authData of ['x', 3, [1]]) {
      const res = await put(u.objectId, { authData }, u.sessionToken);
      expect(res.json, JSON.stringify(authData)).toEqual(BAD_AUTHDATA);
    }
    const me = await t.request('GET', '/users/me', { sessionToken: u.sessionToken });
    expect(me.json.username).toBe('upd-checks');
  });

  it('a changed username is stored lower-case', async () => {
    const u = await signUp('upd-case');
    const res = await put(u.objectId, { username: 'Upd-Case-New' }, u.sessionToken);
    expect(res.status, res.text).toBe(200);
    const me = await t.request('GET', '/users/me', { sessionToken: u.sessionToken });
    expect(me.json.username).toBe('upd-case-new');
  });

  it('keeping one\'s own email (any case) is not "taken"', async () => {
    const u = await signUp('own-mail', { email: 'own@example.com' });
    const res = await put(u.objectId, { email: 'OWN@example.com', username: 'own-mail' }, u.sessionToken);
    expect(res.status, res.text).toBe(200);
  });

  it('MFA: only the master key removes it; a second enrolment is refused; a non-string token is 210', async () => {
    const u = await signUp('mfa-upd');
    const { secret, code } = newTotp();
    const enrol = await put(u.objectId, { authData: { mfa: { secret, token: code() } } }, u.sessionToken);
    expect(enrol.status, enrol.text).toBe(200);
    const again = await put(u.objectId, { authData: { mfa: { secret, token: code() } } }, u.sessionToken);
    expect(again.json).toEqual(err(210, 'MFA is already enabled.'));
    const remove = await put(u.objectId, { authData: { mfa: null } }, u.sessionToken);
    expect(remove.json).toEqual(err(119, 'Only the master key can remove MFA.'));
    const numeric = await t.request('POST', '/login', {
      body: { username: 'mfa-upd', password: 'pw-start', authData: { mfa: { token: Number(code()) } } },
    });
    expect(numeric.status).toBe(400);
    expect(numeric.json.code).toBe(210);
    const removed = await put(u.objectId, { authData: { mfa: null } });
    expect(removed.status, removed.text).toBe(200);
    const login = await t.request('POST', '/login', { body: { username: 'mfa-upd', password: 'pw-start' } });
    expect(login.status, login.text).toBe(200);
  });

  it('failed MFA codes on the anonymous path count against the account: its password login locks', async () => {
    const anon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'anon-lock-1' } } },
    });
    const up = await put(
      anon.json.objectId,
      { username: 'anon-lock', password: 'pw-lock' },
      anon.json.sessionToken,
    );
    expect(up.status, up.text).toBe(200);
    const { secret, code } = newTotp();
    const enrol = await put(
      anon.json.objectId,
      { authData: { mfa: { secret, token: code() } } },
      up.json.sessionToken,
    );
    expect(enrol.status, enrol.text).toBe(200);
    const wrong = () => ('000000' === code() ? '111111' : '000000');
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', '/users', {
        body: { authData: { anonymous: { id: 'anon-lock-1' }, mfa: { token: wrong() } } },
      });
      expect(res.json.code).toBe(210);
    }
    const login = await t.request('POST', '/login', {
      body: { username: 'anon-lock', password: 'pw-lock', authData: { mfa: { token: code() } } },
    });
    expect(login.status).toBe(404);
    expect(login.json.code).toBe(101);
    expect(login.json.error).toMatch(/^Your account is locked/);
  });

  it('authData by the master key: links an anonymous id, sets and clears other providers, keeps the rest', async () => {
    const u = await signUp('auth-master');
    // A user may link an anonymous id too now (issue 29: "not only at sign-up"); its own test is in
    // users-providers.test.ts. Here another id, so that the master's link below is a change.
    const client = await put(u.objectId, { authData: { anonymous: { id: 'own-link' } } }, u.sessionToken);
    expect(client.status, client.text).toBe(200);
    const other = await put(u.objectId, { authData: { custom: { id: 'c' } } }, u.sessionToken);
    expect(other.json).toEqual(err(252, 'This authentication method is unsupported.'));

    const link = await put(u.objectId, { authData: { anonymous: { id: 'late-link' } } });
    expect(link.status, link.text).toBe(200);
    const viaAnon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'late-link' } } },
    });
    expect(viaAnon.status, viaAnon.text).toBe(200);
    expect(viaAnon.json.objectId).toBe(u.objectId);

    const set = await put(u.objectId, { authData: { custom: { id: 'c' } } });
    expect(set.status, set.text).toBe(200);
    const row = async () => (await t.request('GET', `/users/${u.objectId}`, { as: 'master' })).json.authData;
    expect(await row()).toEqual({ anonymous: { id: 'late-link' }, custom: { id: 'c' } });
    expect((await put(u.objectId, { authData: { custom: null } })).status).toBe(200);
    expect(await row()).toEqual({ anonymous: { id: 'late-link' } });
  });

  it('the anonymous upgrade rotates the token; other updates and master password changes do not', async () => {
    const anon = await t.request('POST', '/users', { body: { authData: { anonymous: { id: 'rot-1' } } } });
    const old = anon.json.sessionToken as string;
    const field = await put(anon.json.objectId, { nickname: 'n' }, old);
    expect(field.status, field.text).toBe(200);
    expect(field.json.sessionToken).toBeUndefined();
    expect((await t.request('GET', '/users/me', { sessionToken: old })).status).toBe(200);

    const up = await put(anon.json.objectId, { username: 'rot-up', password: 'pw-rot' }, old);
    expect(up.status, up.text).toBe(200);
    expect(typeof up.json.sessionToken).toBe('string');
    expect(up.json.sessionToken).not.toBe(old);
    expect((await t.request('GET', '/users/me', { sessionToken: old })).json.code).toBe(209);
    const fresh = await t.request('GET', '/sessions/me', { sessionToken: up.json.sessionToken });
    expect(fresh.json.createdWith).toEqual({ action: 'upgrade', authProvider: 'password' });

    const anon2 = await t.request('POST', '/users', { body: { authData: { anonymous: { id: 'rot-2' } } } });
    const byMaster = await put(anon2.json.objectId, { password: 'pw-by-master' });
    expect(byMaster.status, byMaster.text).toBe(200);
    expect(byMaster.json.sessionToken).toBeUndefined();
    const plain = await signUp('rot-plain');
    const plainMaster = await put(plain.objectId, { password: 'pw-new' });
    expect(plainMaster.json.sessionToken).toBeUndefined();
    // The master's change ended every session of the user; the user's own keeps the one it used.
    expect((await t.request('GET', '/users/me', { sessionToken: plain.sessionToken })).json.code).toBe(209);
    const relog = await t.request('POST', '/login', { body: { username: 'rot-plain', password: 'pw-new' } });
    const plainSelf = await put(plain.objectId, { password: 'pw-newer' }, relog.json.sessionToken);
    expect(plainSelf.status, plainSelf.text).toBe(200);
    expect(plainSelf.json.sessionToken).toBeUndefined();
    expect((await t.request('GET', '/users/me', { sessionToken: relog.json.sessionToken })).status).toBe(200);
  });

  it('only a password change ends the other sessions', async () => {
    const u = await signUp('two-sessions');
    const second = await t.request('POST', '/login', {
      body: { username: 'two-sessions', password: 'pw-start' },
    });
    expect((await put(u.objectId, { nickname: 'x' }, u.sessionToken)).status).toBe(200);
    expect((await t.request('GET', '/users/me', { sessionToken: second.json.sessionToken })).status).toBe(
      200,
    );
    expect((await put(u.objectId, { password: 'pw-2' }, u.sessionToken)).status).toBe(200);
    expect((await t.request('GET', '/users/me', { sessionToken: second.json.sessionToken })).json.code).toBe(
      209,
    );
    expect((await t.request('GET', '/users/me', { sessionToken: u.sessionToken })).status).toBe(200);
  });

  it('concurrent renames to one username: one wins, the others get 202', async () => {
    const a = await signUp('ren-a');
    const b = await signUp('ren-b');
    const c = await signUp('ren-c');
    const results = await Promise.all(
      [a, b, c].map((u) => put(u.objectId, { username: 'ren-target', password: 'pw-ren' }, u.sessionToken)),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    for (const r of results.filter((x) => x.status === 400)) {
      expect(r.json).toEqual(err(202, 'Account already exists for this username.'));
    }
  });

  it('without verifyUserEmails an email change sends no mail and sets no emailVerified', async () => {
    const u = await signUp('no-verify', { email: 'nv1@example.com' });
    const res = await put(u.objectId, { email: 'nv2@example.com' }, u.sessionToken);
    expect(res.status, res.text).toBe(200);
    await settle();
    expect((await mailbox(t)).filter((m) => m.to.startsWith('nv')).length).toBe(0);
    const row = await t.request('GET', `/users/${u.objectId}`, { as: 'master' });
    expect(row.json.email).toBe('nv2@example.com');
    expect(row.json.emailVerified).toBeUndefined();
  });

  it('deleting another user without a session names the user; with no user at all too', async () => {
    const u = await signUp('del-target');
    const anonymous = await t.request('DELETE', `/users/${u.objectId}`);
    expect(anonymous.status).toBe(400);
    expect(anonymous.json).toEqual(err(206, `Insufficient auth to delete user ${u.objectId}.`));
    const other = await signUp('del-other');
    const byOther = await t.request('DELETE', `/users/${u.objectId}`, { sessionToken: other.sessionToken });
    expect(byOther.json).toEqual(err(206, `Insufficient auth to delete user ${u.objectId}.`));
    expect((await t.request('GET', `/users/${u.objectId}`, { as: 'master' })).status).toBe(200);
  });
});

describe('email changes and mail links', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ verifyUserEmails: true, passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });
  const put = (id: string, body: unknown, sessionToken?: string) =>
    t.request('PUT', `/users/${id}`, sessionToken ? { sessionToken, body } : { as: 'master', body });
  const mailsTo = async (to: string) => (await mailbox(t)).filter((m) => m.to === to).length;
  const verified = async (id: string) =>
    (await t.request('GET', `/users/${id}`, { as: 'master' })).json.emailVerified as unknown;

  it('the master key signs up with emailVerified as sent; without it the address is unverified and mailed', async () => {
    const set = await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'm-verified', password: 'pw', email: 'm-verified@example.com', emailVerified: true },
    });
    expect(set.status, set.text).toBe(201);
    expect(await verified(set.json.objectId)).toBe(true);
    const unset = await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'm-unset', password: 'pw', email: 'm-unset@example.com' },
    });
    expect(await verified(unset.json.objectId)).toBe(false);
    await waitForMail(t, 'm-unset@example.com');
    await settle();
    expect(await mailsTo('m-verified@example.com')).toBe(0);
  });

  it('updates that keep the email leave verification, links and the mailbox alone', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'keeper', password: 'pw-keep', email: 'keeper@example.com' },
    });
    const id = res.json.objectId as string;
    const verifyToken = tokenIn(await waitForMail(t, 'keeper@example.com'), 'verify_email');
    const page = await fetch(`${t.url}/apps/test-app/verify_email?token=${verifyToken}`);
    expect(page.status).toBe(200);
    expect(await verified(id)).toBe(true);
    expect(
      (await t.request('POST', '/requestPasswordReset', { body: { email: 'keeper@example.com' } })).status,
    ).toBe(200);
    const resetToken = tokenIn(await waitForMail(t, 'keeper@example.com', 2), 'reset');
    const before = (await mailbox(t)).length;

    expect((await put(id, { nickname: 'k' }, res.json.sessionToken)).status).toBe(200);
    expect((await put(id, { email: 'keeper@example.com' }, res.json.sessionToken)).status).toBe(200);
    expect((await put(id, { nickname: 'k2' })).status).toBe(200);
    await settle();
    expect((await mailbox(t)).length).toBe(before);
    expect(await verified(id)).toBe(true);

    const done = await postForm(`${t.url}/apps/test-app/reset`, {
      token: resetToken,
      new_password: 'pw-after',
      confirm_password: 'pw-after',
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Password changed');
  });

  it('a changed email by the user or the master (without emailVerified) is unverified and mailed', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'mover', password: 'pw-move', email: 'mover1@example.com' },
    });
    const id = res.json.objectId as string;
    await waitForMail(t, 'mover1@example.com');
    expect((await put(id, { email: 'mover2@example.com', emailVerified: true })).status).toBe(200);
    expect(await verified(id)).toBe(true);
    await settle();
    expect(await mailsTo('mover2@example.com')).toBe(0);
    expect((await put(id, { email: 'mover3@example.com' })).status).toBe(200);
    expect(await verified(id)).toBe(false);
    const mail = await waitForMail(t, 'mover3@example.com');
    expect(mail.text).toContain('Hi mover,');
  });

  it('reset and verification requests name a missing or malformed email', async () => {
    for (const path of ['/requestPasswordReset', '/verificationEmailRequest']) {
      for (const body of [{}, { email: '' }, { email: null }]) {
        const res = await t.request('POST', path, { body });
        expect(res.status).toBe(400);
        expect(res.json).toEqual(err(204, 'you must provide an email'));
      }
      for (const body of [{ email: 'nope' }, { email: 5 }]) {
        const res = await t.request('POST', path, { body });
        expect(res.json).toEqual(BAD_EMAIL);
      }
    }
  });

  it('an unknown well-formed reset token changes nothing; a used one neither', async () => {
    const bad = await postForm(`${t.url}/apps/test-app/reset`, {
      token: 'a'.repeat(64),
      new_password: 'pw-x',
      confirm_password: 'pw-x',
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).not.toContain('Password changed');
  });

  it('two uses of one verification link at once: exactly one verifies', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'verif-twice', password: 'pw-vt', email: 'verif-twice@example.com' },
    });
    const token = tokenIn(await waitForMail(t, 'verif-twice@example.com'), 'verify_email');
    const url = `${t.url}/apps/test-app/verify_email?token=${token}`;
    const answers = await Promise.all([fetch(url), fetch(url), fetch(url)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400]);
    expect(await verified(res.json.objectId)).toBe(true);
    expect((await fetch(url)).status).toBe(400);
  });

  it('resetPassword and verifyEmail with an unknown token change nothing; one token verifies once', async () => {
    const users = new Users(t.service.data, { send: async () => {} }, () => 'http://x');
    expect(await users.resetPassword('b'.repeat(64), 'pw-x')).toBe(false);
    expect(await users.verifyEmail('b'.repeat(64))).toBe(false);
    const res = await t.request('POST', '/users', {
      body: { username: 'verif-direct', password: 'pw-vd', email: 'verif-direct@example.com' },
    });
    const token = tokenIn(await waitForMail(t, 'verif-direct@example.com'), 'verify_email');
    const results = await Promise.all([
      users.verifyEmail(token),
      users.verifyEmail(token),
      users.verifyEmail(token),
    ]);
    expect(results.sort()).toEqual([false, false, true]);
    expect(await verified(res.json.objectId)).toBe(true);
  });

  it('a store failure while using a link is not taken for a used link: it is raised', async () => {
    const users = new Users(t.service.data, { send: async () => {} }, () => 'http://x');
    await t.request('POST', '/users', {
      body: { username: 'store-fail', password: 'pw-sf', email: 'store-fail@example.com' },
    });
    const verifyToken = tokenIn(await waitForMail(t, 'store-fail@example.com'), 'verify_email');
    await t.request('POST', '/requestPasswordReset', { body: { email: 'store-fail@example.com' } });
    const resetToken = tokenIn(await waitForMail(t, 'store-fail@example.com', 2), 'reset');
    const writes = t.service.data.writes;
    for (const failure of [
      new BdsError(ErrorCode.INTERNAL_SERVER_ERROR, 'disk full'),
      new Error('io error'),
    ]) {
      vi.spyOn(writes, 'update').mockRejectedValueOnce(failure);
      await expect(users.verifyEmail(verifyToken)).rejects.toBe(failure);
      vi.spyOn(writes, 'update').mockRejectedValueOnce(failure);
      await expect(users.resetPassword(resetToken, 'pw-new')).rejects.toBe(failure);
      vi.restoreAllMocks();
    }
    // Both links still work once the store does.
    expect(await users.verifyEmail(verifyToken)).toBe(true);
    expect(await users.resetPassword(resetToken, 'pw-new')).toBe(true);
  });

  it('two uses of one reset link at once: exactly one changes the password', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'twice', password: 'pw-twice', email: 'twice@example.com' },
    });
    expect(res.status).toBe(201);
    await t.request('POST', '/requestPasswordReset', { body: { email: 'twice@example.com' } });
    const mails = async () =>
      (await mailbox(t)).filter((m) => m.to === 'twice@example.com' && m.text.includes('/reset?'));
    for (let i = 0; i < 100 && (await mails()).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const token = tokenIn((await mails())[0]!, 'reset');
    const answers = await Promise.all(
      ['pw-one', 'pw-two'].map((p) =>
        postForm(`${t.url}/apps/test-app/reset`, { token, new_password: p, confirm_password: p }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    const winner = answers[0]!.status === 200 ? 'pw-one' : 'pw-two';
    const loser = winner === 'pw-one' ? 'pw-two' : 'pw-one';
    expect(
      (await t.request('POST', '/login', { body: { username: 'twice', password: winner } })).status,
    ).toBe(200);
    expect((await t.request('POST', '/login', { body: { username: 'twice', password: loser } })).status).toBe(
      404,
    );
  });
});
