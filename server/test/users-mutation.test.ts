import { createHash } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MASTER } from '../src/kernel/caller.ts';
import { Lockout } from '../src/users/lockout.ts';
import { COL } from '../src/users/service.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Behaviour the mutation runs of the users code (issue 10) found unpinned: the lockout's wait in
 * minutes, its per-name counting and its memory bound; the checks of an MFA enrolment request and
 * what it stores; logins against stored password hashes the service cannot use; the session
 * routes and the login request's checks. Each test pins the exact status, code and message.
 */

const BAD_LOGIN = { code: 101, error: 'Invalid username/password.' };
const locked = (minutes: number) => ({
  code: 101,
  error: `Your account is locked due to multiple failed login attempts. Please try again after ${minutes} minute(s).`,
});
const ACCOUNT = { caller: MASTER, source: 'account' as const, context: {} };

afterEach(() => {
  vi.useRealTimers();
});

async function signUp(t: TestService, username: string, password: string) {
  const res = await t.request('POST', '/users', { body: { username, password } });
  expect(res.status, res.text).toBe(201);
  return res.json as { objectId: string; sessionToken: string };
}

const logIn = (t: TestService, username: string, password: string) =>
  t.request('POST', '/login', { body: { username, password } });

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
    await signUp(t, 'waiting', 'right-pw');
    for (let i = 0; i < 2; i++) expect((await logIn(t, 'waiting', 'wrong-pw')).json).toEqual(BAD_LOGIN);
    const at = async (ms: number, minutes: number) => {
      vi.setSystemTime(start + ms);
      const res = await logIn(t, 'waiting', 'right-pw');
      expect(res.status, res.text).toBe(404);
      expect(res.json).toEqual(locked(minutes));
    };
    await at(0, 10);
    await at(5 * 60_000, 5);
    await at(5 * 60_000 + 1, 5);
    await at(5 * 60_000 - 1, 6);
    await at(600_000 - 1, 1);
    vi.setSystemTime(start + 600_000);
    expect((await logIn(t, 'waiting', 'right-pw')).status).toBe(200);
  });

  it('failures for names without an account are counted per name: one locked name locks no other', async () => {
    for (let i = 0; i < 2; i++) expect((await logIn(t, 'ghost-a', 'any-pw')).json).toEqual(BAD_LOGIN);
    expect((await logIn(t, 'ghost-a', 'any-pw')).json).toEqual(locked(10));
    const other = await logIn(t, 'ghost-b', 'any-pw');
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
        expect(err).toMatchObject({ code: 101, message: locked(1).error });
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

describe('MFA enrolment request', () => {
  let t: TestService;
  let user: { objectId: string; sessionToken: string };
  const SHAPE = {
    code: 210,
    error: 'MFA enrolment needs authData.mfa = {secret: <base32>, token: <current code>}.',
  };
  const WEAK = { code: 210, error: 'The MFA secret must be base32 and at least 26 characters (128 bits).' };
  const codeFor = (secret: string) =>
    new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate();
  const enrol = (mfa: unknown) =>
    t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { authData: { mfa } },
    });

  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
    user = await signUp(t, 'enrolling', 'pw-e');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a request that is not {secret, token} with the shape it needs', async () => {
    for (const mfa of ['JBSWY3DPEHPK3PXP', 123456, true, ['secret'], { token: '123456' }, { secret: 42 }]) {
      const res = await enrol(mfa);
      expect(res.status, JSON.stringify(mfa)).toBe(400);
      expect(res.json, JSON.stringify(mfa)).toEqual(SHAPE);
    }
  });

  it('refuses a secret shorter than 26 base32 characters, or with other characters, even with its right code', async () => {
    const good = new Secret({ size: 20 }).base32; // 32 characters
    const short = good.slice(0, 25);
    // `1`, `8`, `9` and `0` are not base32, before or after a long enough secret; `=` is padding
    // only at the end (inside, it is refused even with the code of the secret without it).
    const cases: Array<[string, string]> = [
      [short, codeFor(short)],
      [`1${good}`, codeFor(good)],
      [`${good}8`, codeFor(good)],
      [`${good.slice(0, 16)}0${good.slice(16)}`, codeFor(good)],
      [`${good.slice(0, 16)}=${good.slice(16)}`, codeFor(good)],
    ];
    for (const [secret, token] of cases) {
      const res = await enrol({ secret, token });
      expect(res.status, secret).toBe(400);
      expect(res.json, secret).toEqual(WEAK);
    }
    // Nothing was enrolled: the password alone still logs in.
    const login = await logIn(t, 'enrolling', 'pw-e');
    expect(login.status, login.text).toBe(200);
    expect(login.json.authData).toBeUndefined();
    // 26 characters is enough.
    const enough = good.slice(0, 26);
    const ok = await enrol({ secret: enough.toLowerCase(), token: codeFor(enough) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.authDataResponse.mfa.recovery).toHaveLength(10);
  });
});

describe('MFA enrolment: what is stored', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a padded, lower-case 128-bit secret is kept upper-case without padding; recovery codes only as SHA-256 hex', async () => {
    const user = await signUp(t, 'padded', 'pw-p');
    const secret = new Secret({ size: 16 }).base32; // 26 characters: RFC 4648 pads it with six `=`
    expect(secret).toHaveLength(26);
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
    const res = await t.request('PUT', `/users/${user.objectId}`, {
      sessionToken: user.sessionToken,
      body: { authData: { mfa: { secret: `${secret.toLowerCase()}======`, token: totp.generate() } } },
    });
    expect(res.status, res.text).toBe(200);
    const recovery = res.json.authDataResponse.mfa.recovery as string[];
    expect(recovery).toHaveLength(10);
    for (const code of recovery) expect(code).toMatch(/^[0-9a-f]{20}$/);
    const rows = await t.service.data.lookups.internal('_User', 'objectId', user.objectId, [COL.mfa]);
    expect(JSON.parse(rows[0]![COL.mfa] as string)).toEqual({
      secret,
      recovery: recovery.map((code) => createHash('sha256').update(code).digest('hex')),
    });
    // A recovery code logs in once (its digest is found and removed).
    const login = (token: string) =>
      t.request('POST', '/login', {
        body: { username: 'padded', password: 'pw-p', authData: { mfa: { token } } },
      });
    expect((await login(recovery[3]!)).status).toBe(200);
    const again = await login(recovery[3]!);
    expect(again.status).toBe(400);
    expect(again.json).toEqual({ code: 210, error: 'Invalid MFA token.' });
  });
});

describe('login against a stored hash the service cannot use', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Replaces the stored hash of `userId` (as a store written by another version might hold it). */
  async function storeHash(userId: string, hash: string) {
    await t.service.data.writes.update(
      ACCOUNT,
      '_User',
      userId,
      {},
      { internal: { [COL.hash]: hash }, touch: false },
    );
  }
  async function storedHash(userId: string): Promise<string> {
    const rows = await t.service.data.lookups.internal('_User', 'objectId', userId, [COL.hash]);
    return rows[0]![COL.hash] as string;
  }

  it('an scrypt hash without its six parts refuses every password as a bad login, not a 500', async () => {
    const user = await signUp(t, 'truncated', 'right-pw');
    const [scheme, n, r, p, salt] = (await storedHash(user.objectId)).split('$');
    expect(scheme).toBe('scrypt');
    for (const broken of [`scrypt$${n}$${r}$${p}$${salt}`, `scrypt$${n}`, 'scrypt']) {
      await storeHash(user.objectId, broken);
      for (const password of ['right-pw', 'wrong-pw']) {
        const res = await logIn(t, 'truncated', password);
        expect(res.status, broken).toBe(404);
        expect(res.json, broken).toEqual(BAD_LOGIN);
      }
    }
  });

  it('a six-part hash of another scheme is not read as scrypt, even with scrypt parameters and key', async () => {
    const user = await signUp(t, 'otherscheme', 'right-pw');
    const parts = (await storedHash(user.objectId)).split('$');
    await storeHash(user.objectId, ['argon2', ...parts.slice(1)].join('$'));
    const res = await logIn(t, 'otherscheme', 'right-pw');
    expect(res.status, res.text).toBe(404);
    expect(res.json).toEqual(BAD_LOGIN);
    await storeHash(user.objectId, parts.join('$'));
    expect((await logIn(t, 'otherscheme', 'right-pw')).status).toBe(200);
  });

  it('a hash of another key length refuses even the right password as a bad login, not a 500', async () => {
    const user = await signUp(t, 'shortkey', 'right-pw');
    const parts = (await storedHash(user.objectId)).split('$');
    const key = Buffer.from(parts[5]!, 'base64url');
    expect(key).toHaveLength(32);
    // The first 16 bytes of the right key: a prefix match is no match.
    await storeHash(
      user.objectId,
      [...parts.slice(0, 5), key.subarray(0, 16).toString('base64url')].join('$'),
    );
    const res = await logIn(t, 'shortkey', 'right-pw');
    expect(res.status, res.text).toBe(404);
    expect(res.json).toEqual(BAD_LOGIN);
    // The stored hash restored: the same password logs in (the refusal was the length).
    await storeHash(user.objectId, parts.join('$'));
    expect((await logIn(t, 'shortkey', 'right-pw')).status).toBe(200);
  });
});

describe('sessions and login requests', () => {
  let t: TestService;
  let user: { objectId: string; sessionToken: string };
  let sessionId: string;
  const TOKEN_REQUIRED = { code: 209, error: 'Session token required: send X-Backend-Session-Token.' };

  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
    user = await signUp(t, 'sessioned', 'pw-s');
    const me = await t.request('GET', '/sessions/me', { sessionToken: user.sessionToken });
    expect(me.status, me.text).toBe(200);
    sessionId = me.json.objectId;
  });
  afterAll(async () => {
    await t?.close();
  });

  // GET /sessions without a token is pinned in sessions.test.ts. (No mutant of service.ts needs
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
    const login = await logIn(t, 'sessioned', 'pw-s');
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
