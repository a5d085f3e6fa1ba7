import { Secret, TOTP } from 'otpauth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Lockout } from '../../src/users/lockout.ts';
import { mailedLink } from '../helpers/mailbox.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { BAD_LOGIN, lockedFor, logInUser, signUpUser } from '../helpers/users.ts';

/**
 * Account lockout (option `accountLockout`): what ends a lock and what counts towards one. The
 * service runs in this process, so moving the faked `Date` (and nothing else: timers stay real)
 * moves the lockout's clock: the expiry is checked at an exact instant, never in a real-time window.
 * Also the wait a lock names in minutes, per-name counting, and the bound on the counts kept.
 */
const THRESHOLD = 3;
const DURATION = 60; // seconds
const LOCKED = lockedFor(1);

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
    const base = await mailedLink(t, 'forgetful@example.com', 'reset');
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

describe('lockout: the wait it names', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ accountLockout: { threshold: 2, duration: 600 }, passwordHashCost: 12 });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await t?.close();
  });

  it('names the minutes left, rounded up, until the lock ends', async () => {
    const start = Date.parse('2030-01-01T00:00:00.000Z');
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    await signUpUser(t, 'waiting', 'right-pw');
    for (let i = 0; i < 2; i++) expect((await logInUser(t, 'waiting', 'wrong-pw')).json).toEqual(BAD_LOGIN);
    const at = async (ms: number, minutes: number) => {
      vi.setSystemTime(start + ms);
      const res = await logInUser(t, 'waiting', 'right-pw');
      expect(res.status, res.text).toBe(404);
      expect(res.json).toEqual(lockedFor(minutes));
    };
    await at(0, 10);
    await at(5 * 60_000, 5);
    await at(5 * 60_000 + 1, 5);
    await at(5 * 60_000 - 1, 6);
    await at(600_000 - 1, 1);
    vi.setSystemTime(start + 600_000);
    expect((await logInUser(t, 'waiting', 'right-pw')).status).toBe(200);
  });

  it('failures for names without an account are counted per name: one locked name locks no other', async () => {
    for (let i = 0; i < 2; i++) expect((await logInUser(t, 'ghost-a', 'any-pw')).json).toEqual(BAD_LOGIN);
    expect((await logInUser(t, 'ghost-a', 'any-pw')).json).toEqual(lockedFor(10));
    const other = await logInUser(t, 'ghost-b', 'any-pw');
    expect(other.status).toBe(404);
    expect(other.json).toEqual(BAD_LOGIN);
    const byEmail = await t.request('POST', '/login', {
      body: { email: 'ghost-a@example.com', password: 'x' },
    });
    expect(byEmail.json).toEqual(BAD_LOGIN);
  });
});

/**
 * The failure counts are kept in memory, bounded: past 50,000 tracked names the next failure
 * forgets every name that is not locked, and keeps the locks (a flood of names must not lift a
 * lock). Filling 50,000 names over HTTP (a scrypt each) would take minutes, so this drives the
 * service's Lockout class itself, as the login does (`user:<id>` and `username:<name>` keys).
 */
describe('lockout: the memory bound', () => {
  it('at 50,000 names nothing is forgotten; past it, unlocked counts go and locks stay', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2030-01-01T00:00:00.000Z') });
    const lockout = new Lockout({ threshold: 3, duration: 60 });
    const isLocked = async (key: string) => {
      try {
        await lockout.check(key);
        return false;
      } catch (err) {
        expect(err).toMatchObject({ code: 101, message: lockedFor(1).error });
        return true;
      }
    };
    for (let i = 0; i < 3; i++) await lockout.fail('user:victim');
    for (let i = 0; i < 2; i++) await lockout.fail('user:counting');
    for (let i = 0; i < 2; i++) await lockout.fail('user:late');
    for (let i = 0; i < 49_997; i++) await lockout.fail(`username:flood-${i}`);
    // 50,000 names tracked: the third failure of `counting` still counts and locks.
    await lockout.fail('user:counting');
    expect(await isLocked('user:counting')).toBe(true);
    // One more name makes 50,001; the next failure prunes first: `late` starts again from one.
    await lockout.fail('username:one-more');
    await lockout.fail('user:late');
    expect(await isLocked('user:late')).toBe(false);
    await lockout.fail('user:late');
    expect(await isLocked('user:late')).toBe(false);
    await lockout.fail('user:late');
    expect(await isLocked('user:late')).toBe(true);
    // The locks survived the prune.
    expect(await isLocked('user:victim')).toBe(true);
    expect(await isLocked('user:counting')).toBe(true);
  });
});

describe('account lockout: the threshold and a bad option', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ accountLockout: { threshold: 3, duration: 60 } });
    await signUpUser(t, 'ivan', 'right');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('locks a name after N failures, even for the right password, and answers the same for unknown names', async () => {
    for (let i = 0; i < 3; i++) expect((await logInUser(t, 'ivan', 'wrong')).json.code).toBe(101);
    const locked = await logInUser(t, 'ivan', 'right');
    expect(locked.status).toBe(404);
    expect(locked.json.code).toBe(101);
    expect(locked.json.error).toContain('locked');
    for (let i = 0; i < 3; i++) expect((await logInUser(t, 'nobody', 'wrong')).json.code).toBe(101);
    const ghost = await logInUser(t, 'nobody', 'right');
    expect(ghost.json).toEqual(locked.json);
  });

  it('a bad lockout option stops the start', async () => {
    await expect(startService({ accountLockout: { threshold: 0, duration: 1 } })).rejects.toThrow(
      /accountLockout/,
    );
  });
});
