import { Secret, TOTP } from 'otpauth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { COL } from '../src/users/service.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * The guards of the user service (server/src/users/service.ts): each test pins the exact refusal
 * and checks that nothing was written, so removing a guard fails it.
 */

type Mail = { to: string; text: string };

/** The n-th link to `page` mailed to `to` (mail is sent after the answer: polled, generous bound). */
async function mailedLink(t: TestService, to: string, page: string, n = 1): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const res = await t.request('GET', '/devMailbox', { as: 'master' });
    const mails = (res.json.results as Mail[]).filter((m) => m.to === to);
    if (mails.length >= n) {
      const m = new RegExp(`https?://\\S+/apps/[^/]+/${page}\\?token=[0-9a-f]{64}`).exec(mails[n - 1]!.text);
      if (!m) throw new Error(`no ${page} link in: ${mails[n - 1]!.text}`);
      // The service's own address (the mail names the public URL; the test talks to 127.0.0.1).
      return `${t.url}${m[0].slice(m[0].indexOf('/apps/'))}`;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail #${n} to ${to}`);
}

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

describe('user-service guards: a verification link expires', () => {
  const VALIDITY = 600; // seconds
  let t: TestService;

  beforeAll(async () => {
    t = await startService({
      verifyUserEmails: true,
      emailVerifyTokenValidity: VALIDITY,
      passwordHashCost: 12,
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  afterAll(async () => {
    vi.useRealTimers();
    await t?.close();
  });

  it('the link works until its validity ends and never after (checked at the instant, faked Date)', async () => {
    const start = Date.parse('2030-06-01T00:00:00.000Z');
    // Only Date is faked: timers stay real. The service runs in this process and reads this Date.
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    const late = await t.request('POST', '/users', {
      body: { username: 'late', password: 'pw', email: 'late@example.com' },
    });
    expect(late.status, late.text).toBe(201);
    const early = await t.request('POST', '/users', {
      body: { username: 'early', password: 'pw', email: 'early@example.com' },
    });
    expect(early.status, early.text).toBe(201);
    const lateLink = await mailedLink(t, 'late@example.com', 'verify_email');
    const earlyLink = await mailedLink(t, 'early@example.com', 'verify_email');

    vi.setSystemTime(start + VALIDITY * 1000 - 1);
    const ok = await fetch(earlyLink);
    expect(ok.status).toBe(200);
    expect(
      (await t.request('GET', `/classes/_User/${early.json.objectId}`, { as: 'master' })).json.emailVerified,
    ).toBe(true);

    vi.setSystemTime(start + VALIDITY * 1000);
    const expired = await fetch(lateLink);
    expect(expired.status).toBe(400);
    expect(await expired.text()).toContain('This link is invalid, was already used, or has expired.');
    expect(
      (await t.request('GET', `/classes/_User/${late.json.objectId}`, { as: 'master' })).json.emailVerified,
    ).toBe(false);
  });
});
