import { Secret, TOTP } from 'otpauth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Account lockout (option `accountLockout`): what ends a lock and what counts towards one. The
 * service runs in this process, so moving the faked `Date` (and nothing else: timers stay real)
 * moves the lockout's clock: the expiry is checked at an exact instant, never in a real-time window.
 */
const THRESHOLD = 3;
const DURATION = 60; // seconds
const LOCKED = {
  code: 101,
  error: 'Your account is locked due to multiple failed login attempts. Please try again after 1 minute(s).',
};
const BAD_LOGIN = { code: 101, error: 'Invalid username/password.' };

let t: TestService;

beforeAll(async () => {
  t = await startService({
    accountLockout: { threshold: THRESHOLD, duration: DURATION },
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

const signUp = async (username: string, password: string, email?: string) => {
  const res = await t.request('POST', '/users', { body: { username, password, email } });
  expect(res.status, res.text).toBe(201);
  return res.json as { objectId: string; sessionToken: string };
};
const logIn = (username: string, password: string, authData?: unknown) =>
  t.request('POST', '/login', { body: { username, password, authData } });

/** Fails `n` logins with a wrong password, each answered as a plain bad login. */
async function fail(username: string, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await logIn(username, 'wrong-password');
    expect(res.status, res.text).toBe(404);
    expect(res.json).toEqual(BAD_LOGIN);
  }
}

async function expectLocked(username: string, password: string, authData?: unknown) {
  const res = await logIn(username, password, authData);
  expect(res.status, res.text).toBe(404);
  expect(res.json).toEqual(LOCKED);
  expect(res.text).not.toContain('sessionToken');
}

async function expectLogin(username: string, password: string, authData?: unknown) {
  const res = await logIn(username, password, authData);
  expect(res.status, res.text).toBe(200);
  expect(res.json.sessionToken).toMatch(/^r:/);
}

describe('account lockout', () => {
  it('a lock holds until its duration has passed, then the right password works again', async () => {
    const start = Date.parse('2030-01-01T00:00:00.000Z');
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    await signUp('expiring', 'right-pw');
    await fail('expiring', THRESHOLD);
    await expectLocked('expiring', 'right-pw');
    // One millisecond before the end: still locked.
    vi.setSystemTime(start + DURATION * 1000 - 1);
    await expectLocked('expiring', 'right-pw');
    // At the end: open again, and the failures start from zero.
    vi.setSystemTime(start + DURATION * 1000);
    await expectLogin('expiring', 'right-pw');
    await fail('expiring', THRESHOLD - 1);
    await expectLogin('expiring', 'right-pw');
  });

  it('a successful login resets the failure count', async () => {
    await signUp('resetting', 'right-pw');
    await fail('resetting', THRESHOLD - 1);
    await expectLogin('resetting', 'right-pw');
    // Without the reset these would be failures THRESHOLD .. 2*THRESHOLD-2 and lock the account.
    await fail('resetting', THRESHOLD - 1);
    await expectLogin('resetting', 'right-pw');
    // The count still works: THRESHOLD failures in a row lock.
    await fail('resetting', THRESHOLD);
    await expectLocked('resetting', 'right-pw');
  });

  it('wrong MFA codes count towards the lock, even with the right password', async () => {
    const secret = new Secret({ size: 20 }).base32;
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
    const user = await signUp('second-factor', 'right-pw');
    const enrol = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { authData: { mfa: { secret, token: totp.generate() } } },
    });
    expect(enrol.status, enrol.text).toBe(200);
    // A code that is valid in no window the check accepts.
    const valid = new Set([-1, 0, 1].map((d) => totp.generate({ timestamp: Date.now() + d * 30_000 })));
    const wrong = ['000000', '111111', '222222', '333333', '444444'].find((c) => !valid.has(c))!;
    for (let i = 0; i < THRESHOLD; i++) {
      const res = await logIn('second-factor', 'right-pw', { mfa: { token: wrong } });
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({ code: 210, error: 'Invalid MFA token.' });
    }
    // Locked now: the right password and the right code are refused too.
    await expectLocked('second-factor', 'right-pw', { mfa: { token: totp.generate() } });
  });

  it('a password reset unlocks the account', async () => {
    const user = await signUp('forgetful', 'old-pw', 'forgetful@example.com');
    await fail('forgetful', THRESHOLD);
    await expectLocked('forgetful', 'old-pw');
    const asked = await t.request('POST', '/requestPasswordReset', {
      body: { email: 'forgetful@example.com' },
    });
    expect(asked.json).toEqual({});
    const link = await resetLink('forgetful@example.com');
    const base = `${t.url}${link.slice(link.indexOf('/apps/'))}`;
    const done = await fetch(base.split('?')[0]!, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: new URL(base).searchParams.get('token')!,
        new_password: 'new-pw',
        confirm_password: 'new-pw',
      }).toString(),
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Password changed');
    // At once, well inside the lock's duration.
    const res = await logIn('forgetful', 'new-pw');
    expect(res.status, res.text).toBe(200);
    expect(res.json.objectId).toBe(user.objectId);
  });
});

/** The reset link mailed to `to` (mail is sent after the answer: polled, with a generous bound). */
async function resetLink(to: string): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const res = await t.request('GET', '/devMailbox', { as: 'master' });
    const mail = (res.json.results as Array<{ to: string; text: string }>).find((m) => m.to === to);
    const m = mail && /https?:\/\/\S+\/apps\/[^/]+\/reset\?token=[0-9a-f]{64}/.exec(mail.text);
    if (m) return m[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no reset mail to ${to}`);
}
