import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COL } from '../../src/users/shared.ts';
import { mailbox, mailedLink, settle } from '../helpers/mailbox.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { BAD_AUTHDATA, BAD_USERNAME, NOT_OBJECT, newTotp, refusal } from '../helpers/users.ts';

/**
 * The guards of the user service (server/src/users/service.ts): each test pins the exact refusal
 * and checks that nothing was written, so removing a guard fails it. Then updates and deletes
 * (PUT and DELETE /users/<id>): their checks, authData and MFA changes, session rotation and ends.
 */

const secret = new Secret({ size: 20 }).base32;
const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });

describe('user-service guards', () => {
  let t: TestService;

  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const signUp = async (body: Record<string, unknown>) => {
    const res = await t.request('POST', '/users', { body });
    expect(res.status, res.text).toBe(201);
    return res.json as { objectId: string; sessionToken: string };
  };
  const masterRow = async (objectId: string) => {
    const res = await t.request('GET', `/classes/_User/${objectId}`, { as: 'master' });
    expect(res.status, res.text).toBe(200);
    return res.json;
  };
  const usersNamed = async (username: string) =>
    (await t.request('GET', '/users', { as: 'master', query: { where: { username } } })).json.results;
  const logIn = (username: string, password: string) =>
    t.request('POST', '/login', { body: { username, password } });

  it('dotted authData.* and password.* keys are refused at sign-up and on update, and write nothing', async () => {
    for (const [key, value] of [
      ['authData.anonymous', { id: 'planted-anonymous-id' }],
      ['authData.facebook', { id: '1234' }],
      ['password.hash', 'x'],
    ] as const) {
      const res = await t.request('POST', '/users', {
        body: { username: 'dotted', password: 'pw', [key]: value },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({ code: 105, error: `${key} cannot be written; send authData as a whole.` });
      expect(await usersNamed('dotted')).toEqual([]);
    }
    const user = await signUp({ username: 'dotty', password: 'dotty-pw' });
    for (const [key, value] of [
      ['authData.anonymous', { id: 'planted-anonymous-id' }],
      ['authData.anonymous.id', 'planted-anonymous-id'],
      ['authData.facebook', { id: '1234' }],
      ['password.hash', 'x'],
    ] as const) {
      const res = await t.request('PUT', `/users/${user.objectId}`, {
        sessionToken: user.sessionToken,
        body: { [key]: value },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({ code: 105, error: `${key} cannot be written; send authData as a whole.` });
    }
    const row = await masterRow(user.objectId);
    expect(row.authData).toBeUndefined();
    expect(JSON.stringify(row)).not.toContain('planted');
    // The planted anonymous id opens nothing, and the password is unchanged.
    const anon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'planted-anonymous-id' } } },
    });
    expect(anon.status, anon.text).toBe(201);
    expect(anon.json.objectId).not.toBe(user.objectId);
    expect((await logIn('dotty', 'dotty-pw')).status).toBe(200);
  });

  it('a non-master caller cannot clear authData; the master key can', async () => {
    const id = '7a1e2d9c-0000-4000-8000-00000000c1ea';
    const anon = await t.request('POST', '/users', { body: { authData: { anonymous: { id } } } });
    expect(anon.status, anon.text).toBe(201);
    const res = await t.request('PUT', `/users/${anon.json.objectId}`, {
      sessionToken: anon.json.sessionToken,
      body: { authData: null },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.json).toEqual({ code: 119, error: 'Only the master key can clear authData.' });
    expect((await masterRow(anon.json.objectId)).authData).toEqual({ anonymous: { id } });
    // The anonymous id still logs the same user in.
    const again = await t.request('POST', '/users', { body: { authData: { anonymous: { id } } } });
    expect(again.status, again.text).toBe(200);
    expect(again.json.objectId).toBe(anon.json.objectId);

    const master = await t.request('PUT', `/users/${anon.json.objectId}`, {
      as: 'master',
      body: { authData: null },
    });
    expect(master.status, master.text).toBe(200);
    expect((await masterRow(anon.json.objectId)).authData).toBeUndefined();
  });

  it('MFA cannot be enrolled at sign-up (with or without the master key); nothing is created', async () => {
    for (const as of ['rest', 'master'] as const) {
      const res = await t.request('POST', '/users', {
        as,
        body: {
          username: `mfa-signup-${as}`,
          password: 'pw',
          authData: { mfa: { secret, token: totp.generate() } },
        },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({
        code: 210,
        error: 'MFA is enrolled after sign-up, with PUT /users/<objectId>.',
      });
      expect(await usersNamed(`mfa-signup-${as}`)).toEqual([]);
    }
    // Nor next to a new anonymous id.
    const anon = await t.request('POST', '/users', {
      body: {
        authData: {
          anonymous: { id: '7a1e2d9c-0000-4000-8000-0000000000f1' },
          mfa: { secret, token: totp.generate() },
        },
      },
    });
    expect(anon.status, anon.text).toBe(400);
    expect(anon.json).toEqual({
      code: 210,
      error: 'MFA is enrolled after sign-up, with PUT /users/<objectId>.',
    });
  });

  it('an unsupported auth provider is refused on update (and at sign-up); nothing is linked', async () => {
    const user = await signUp({ username: 'provider-probe', password: 'pw' });
    for (const provider of ['facebook', 'github', 'constructor']) {
      const res = await t.request('PUT', `/users/${user.objectId}`, {
        sessionToken: user.sessionToken,
        body: { authData: { [provider]: { id: '1234', access_token: 'forged' } } },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({ code: 252, error: 'This authentication method is unsupported.' });
      const signup = await t.request('POST', '/users', {
        body: {
          username: `provider-${provider}`,
          password: 'pw',
          authData: { [provider]: { id: '1234', access_token: 'forged' } },
        },
      });
      expect(signup.status, signup.text).toBe(400);
      expect(signup.json).toEqual({ code: 252, error: 'This authentication method is unsupported.' });
      expect(await usersNamed(`provider-${provider}`)).toEqual([]);
    }
    const row = await masterRow(user.objectId);
    expect(row.authData).toBeUndefined();
    expect(JSON.stringify(row)).not.toContain('forged');
  });

  it('a password change ends a pending reset link', async () => {
    const user = await signUp({ username: 'changer', password: 'first-pw', email: 'changer@example.com' });
    expect(
      (await t.request('POST', '/requestPasswordReset', { body: { email: 'changer@example.com' } })).json,
    ).toEqual({});
    const link = await mailedLink(t, 'changer@example.com', 'reset');
    expect((await fetch(link)).status).toBe(200);
    const changed = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { password: 'second-pw' },
    });
    expect(changed.status, changed.text).toBe(200);
    // Both the token digest and its expiry are gone from the row, not only one of them.
    const [internal] = await t.service.data.lookups.internal('_User', 'objectId', user.objectId, [
      COL.resetToken,
      COL.resetExpires,
    ]);
    expect(internal).toMatchObject({ [COL.resetToken]: null, [COL.resetExpires]: null });
    const page = await fetch(link);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('This link is invalid, was already used, or has expired.');
    const post = await fetch(link.split('?')[0]!, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: new URL(link).searchParams.get('token')!,
        new_password: 'attacker-pw',
        confirm_password: 'attacker-pw',
      }).toString(),
    });
    expect(post.status).toBe(400);
    expect((await logIn('changer', 'attacker-pw')).status).toBe(404);
    expect((await logIn('changer', 'second-pw')).status).toBe(200);
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
    expect(missing.json).toEqual(refusal(101, 'Object not found.'));
    for (const password of [42, '', null, true]) {
      const res = await put(u.objectId, { password }, u.sessionToken);
      expect(res.json, JSON.stringify(password)).toEqual(refusal(201, 'password cannot be empty.'));
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
    expect(again.json).toEqual(refusal(210, 'MFA is already enabled.'));
    const remove = await put(u.objectId, { authData: { mfa: null } }, u.sessionToken);
    expect(remove.json).toEqual(refusal(119, 'Only the master key can remove MFA.'));
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
    // users/providers.test.ts. Here another id, so that the master's link below is a change.
    const client = await put(u.objectId, { authData: { anonymous: { id: 'own-link' } } }, u.sessionToken);
    expect(client.status, client.text).toBe(200);
    const other = await put(u.objectId, { authData: { custom: { id: 'c' } } }, u.sessionToken);
    expect(other.json).toEqual(refusal(252, 'This authentication method is unsupported.'));

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
      expect(r.json).toEqual(refusal(202, 'Account already exists for this username.'));
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
    expect(anonymous.json).toEqual(refusal(206, `Insufficient auth to delete user ${u.objectId}.`));
    const other = await signUp('del-other');
    const byOther = await t.request('DELETE', `/users/${u.objectId}`, { sessionToken: other.sessionToken });
    expect(byOther.json).toEqual(refusal(206, `Insufficient auth to delete user ${u.objectId}.`));
    expect((await t.request('GET', `/users/${u.objectId}`, { as: 'master' })).status).toBe(200);
  });
});
