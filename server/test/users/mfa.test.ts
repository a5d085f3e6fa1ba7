import { createHash } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COL } from '../../src/users/shared.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { logInUser, newTotp, signUpUser } from '../helpers/users.ts';

const secret = new Secret({ size: 20 }).base32;
const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
const code = () => totp.generate();
/** A code that is not valid now or in the adjacent windows. */
const wrongCode = () => {
  const valid = new Set([-1, 0, 1].map((d) => totp.generate({ timestamp: Date.now() + d * 30_000 })));
  for (let i = 0; ; i++) {
    const c = String(i).padStart(6, '0');
    if (!valid.has(c)) return c;
  }
};

describe('MFA (TOTP)', () => {
  let t: TestService;
  let userId: string;
  let token: string;
  let recovery: string[];

  const login = (extra: Record<string, unknown> = {}) =>
    t.request('POST', '/login', { body: { username: 'mallory', password: 'pw-m', ...extra } });

  beforeAll(async () => {
    t = await startService();
    const res = await t.request('POST', '/users', { body: { username: 'mallory', password: 'pw-m' } });
    userId = res.json.objectId;
    token = res.json.sessionToken;
    await t.request('POST', '/users', { body: { username: 'plain', password: 'pw-p' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('enrolment with a wrong code is refused (210) and enrols nothing', async () => {
    const res = await t.request('PUT', `/users/${userId}`, {
      sessionToken: token,
      body: { authData: { mfa: { secret, token: wrongCode() } } },
    });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(210);
    expect((await login()).status).toBe(200);
    const weak = await t.request('PUT', `/users/${userId}`, {
      sessionToken: token,
      body: { authData: { mfa: { secret: 'ABC', token: code() } } },
    });
    expect(weak.json.code).toBe(210);
  });

  it('enrolment needs the own session', async () => {
    const other = await t.request('POST', '/login', { body: { username: 'plain', password: 'pw-p' } });
    const res = await t.request('PUT', `/users/${userId}`, {
      sessionToken: other.json.sessionToken,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    expect(res.json.code).toBe(206);
  });

  it('enrolment with the current code answers the recovery codes once', async () => {
    const res = await t.request('PUT', `/users/${userId}`, {
      sessionToken: token,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    expect(res.status, res.text).toBe(200);
    recovery = res.json.authDataResponse.mfa.recovery;
    expect(recovery).toHaveLength(10);
    expect(res.text).not.toContain(secret);
    const me = await t.request('GET', '/users/me', { sessionToken: token });
    expect(me.json.authData).toEqual({ mfa: { status: 'enabled' } });
    expect(me.text).not.toContain(secret);
    expect(me.text).not.toContain(recovery[0]);
    const master = await t.request('GET', `/classes/_User/${userId}`, { as: 'master' });
    expect(master.text).not.toContain(secret);
    const again = await t.request('PUT', `/users/${userId}`, {
      sessionToken: token,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    expect(again.json.code).toBe(210);
  });

  it('an enrolled user without a token: 211; with a wrong one: 210; with the current code: logged in', async () => {
    const without = await login();
    expect(without.status).toBe(400);
    expect(without.json.code).toBe(211);
    expect(without.text).not.toContain('sessionToken');
    const wrong = await login({ authData: { mfa: { token: wrongCode() } } });
    expect(wrong.json.code).toBe(210);
    const ok = await login({ authData: { mfa: { token: code() } } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.sessionToken).toMatch(/^r:/);
    const viaGet = await t.request('GET', '/login', {
      query: { username: 'mallory', password: 'pw-m', authData: { mfa: { token: code() } } },
    });
    expect(viaGet.status, viaGet.text).toBe(200);
  });

  it('a wrong password with a right code is still a plain 101', async () => {
    const res = await t.request('POST', '/login', {
      body: { username: 'mallory', password: 'nope', authData: { mfa: { token: code() } } },
    });
    expect(res.json).toEqual({ code: 101, error: 'Invalid username/password.' });
  });

  it('a recovery code works once', async () => {
    const first = await login({ authData: { mfa: { token: recovery[0] } } });
    expect(first.status, first.text).toBe(200);
    const second = await login({ authData: { mfa: { token: recovery[0] } } });
    expect(second.json.code).toBe(210);
    const other = await login({ authData: { mfa: { token: recovery[1] } } });
    expect(other.status).toBe(200);
  });

  it('users without MFA log in as before', async () => {
    const res = await t.request('POST', '/login', { body: { username: 'plain', password: 'pw-p' } });
    expect(res.status).toBe(200);
  });

  it('only the master key removes MFA', async () => {
    const own = await t.request('PUT', `/users/${userId}`, {
      sessionToken: token,
      body: { authData: { mfa: null } },
    });
    expect(own.json.code).toBe(119);
    const master = await t.request('PUT', `/users/${userId}`, {
      as: 'master',
      body: { authData: { mfa: null } },
    });
    expect(master.status, master.text).toBe(200);
    expect((await login()).status).toBe(200);
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
    user = await signUpUser(t, 'enrolling', 'pw-e');
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
    const login = await logInUser(t, 'enrolling', 'pw-e');
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
    const user = await signUpUser(t, 'padded', 'pw-p');
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

describe('MFA on every login path', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an MFA-enrolled user reached through a still-linked anonymous id must send the MFA token (211/210)', async () => {
    const { secret, code } = newTotp();
    const anon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'rv-anon-mfa' } } },
    });
    expect(anon.status).toBe(201);
    // Upgrade without the unlink: the anonymous id stays a login path (docs/protocol.md#users-and-sessions).
    const up = await t.request('PUT', `/users/${anon.json.objectId}`, {
      sessionToken: anon.json.sessionToken,
      body: { username: 'rv-up', password: 'pw-up', email: 'rv-up@example.com' },
    });
    expect(up.status, up.text).toBe(200);
    const enrol = await t.request('PUT', `/users/${anon.json.objectId}`, {
      sessionToken: up.json.sessionToken,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    expect(enrol.status, enrol.text).toBe(200);

    const sessionsBefore = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { count: '1', limit: '0' },
    });
    const without = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'rv-anon-mfa' } } },
    });
    expect(without.json).toEqual({ code: 211, error: 'Missing additional authData mfa.token.' });
    const wrong = await t.request('POST', '/users', {
      body: {
        authData: {
          anonymous: { id: 'rv-anon-mfa' },
          mfa: { token: '000000' === code() ? '111111' : '000000' },
        },
      },
    });
    expect(wrong.json.code).toBe(210);
    const sessionsAfter = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { count: '1', limit: '0' },
    });
    expect(sessionsAfter.json.count).toBe(sessionsBefore.json.count);

    const right = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'rv-anon-mfa' }, mfa: { token: code() } } },
    });
    expect(right.status, right.text).toBe(200);
    expect(right.json.objectId).toBe(anon.json.objectId);
    expect(right.json.sessionToken).toMatch(/^r:[0-9a-f]{32}$/);
  });

  it('two concurrent logins with the same recovery code: exactly one succeeds (compare-and-set)', async () => {
    const { secret, code } = newTotp();
    const s = await t.request('POST', '/users', { body: { username: 'rv-race', password: 'pw-race' } });
    const enrol = await t.request('PUT', `/users/${s.json.objectId}`, {
      sessionToken: s.json.sessionToken,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    const recovery = enrol.json.authDataResponse.mfa.recovery as string[];
    const attempts = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.request('POST', '/login', {
          body: { username: 'rv-race', password: 'pw-race', authData: { mfa: { token: recovery[0] } } },
        }),
      ),
    );
    expect(attempts.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of attempts.filter((a) => a.status !== 200)) expect(r.json.code).toBe(210);
    // The other codes still work, once each.
    const next = await t.request('POST', '/login', {
      body: { username: 'rv-race', password: 'pw-race', authData: { mfa: { token: recovery[1] } } },
    });
    expect(next.status).toBe(200);
    // The secret is never echoed, not even to the master key.
    const master = await t.request('GET', `/classes/_User/${s.json.objectId}`, { as: 'master' });
    expect(master.text).not.toContain(secret);
    expect(next.text).not.toContain(secret);
  });
});
