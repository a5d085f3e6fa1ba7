import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

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
