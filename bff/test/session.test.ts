import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSIONS_FILE } from '../src/session.ts';
import { type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

const MFA_SECRET = new Secret({ size: 20 }).base32;
const totp = (offset = 0) =>
  new TOTP({ secret: Secret.fromBase32(MFA_SECRET) }).generate({ timestamp: Date.now() + offset * 30_000 });

/** A raw request with an arbitrary Host header (fetch does not let us set it). */
function rawPost(url: string, path: string, host: string, body: unknown) {
  return new Promise<{ status: number; setCookie: string[] }>((resolve, reject) => {
    const u = new URL(url);
    const data = JSON.stringify(body);
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: 'POST',
        headers: {
          Host: host,
          Origin: `http://${host}`,
          'X-Console-CSRF': '1',
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(data),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, setCookie: res.headers['set-cookie'] ?? [] }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('console login and sessions', () => {
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff({
      users: [
        { username: 'admin', role: 'admin' },
        { username: 'viewer', role: 'read-only' },
        { username: 'mfa', role: 'admin', mfaSecret: MFA_SECRET },
        { username: 'victim', role: 'admin' },
      ],
      options: {
        trustProxy: true,
        loginThrottle: { freeAttempts: 2, baseDelaySeconds: 2, maxDelaySeconds: 60 },
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sets a sealed HttpOnly, SameSite=Strict cookie (not Secure on localhost) and answers the session', async () => {
    const c = t.anonymous();
    const res = await c.post('/bff/login', { username: 'viewer', password: TEST_PASSWORD });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ user: { username: 'viewer', role: 'read-only' } });
    const cookie = res.headers.getSetCookie()[0]!;
    expect(cookie).toMatch(/^bds_console=Fe26\.2\*/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\/bff/i);
    expect(cookie).not.toMatch(/Secure/i);
    expect(cookie).not.toContain('viewer');
    expect((await c.get('/bff/session')).json).toEqual({ user: { username: 'viewer', role: 'read-only' } });
  });

  it('marks the cookie Secure outside localhost', async () => {
    const res = await rawPost(t.url, '/bff/login', 'console.example.com', {
      username: 'admin',
      password: TEST_PASSWORD,
    });
    expect(res.status).toBe(200);
    expect(res.setCookie[0]).toMatch(/;\s*Secure/i);
  });

  it('refuses a wrong password, an unknown user and a malformed body in the {code, error} shape', async () => {
    const c = t.anonymous();
    const h = { headers: { 'X-Forwarded-For': '10.0.0.1' } };
    const wrong = await c.post('/bff/login', { username: 'admin', password: 'nope' }, h);
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({ code: 101, error: 'Invalid username or password.' });
    expect(wrong.headers.getSetCookie()).toEqual([]);
    const unknown = await c.post('/bff/login', { username: 'ghost', password: 'nope' }, h);
    expect(unknown.json).toEqual(wrong.json);
    const bad = await c.post(
      '/bff/login',
      { username: 'admin' },
      { headers: { 'X-Forwarded-For': '10.0.0.99' } },
    );
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(107);
    expect(bad.json.error).toMatch(/password/);
  });

  it('answers 401 on the session route and every /bff/ route without a session', async () => {
    const c = t.anonymous();
    expect(await c.get('/bff/session')).toMatchObject({
      status: 401,
      json: { code: 119, error: 'Not logged in.' },
    });
    expect(await c.get('/bff/apps')).toMatchObject({
      status: 401,
      json: { code: 119, error: 'Not logged in.' },
    });
    expect((await c.post('/bff/apps/test-app/classes/X', {})).status).toBe(401);
    const forged = await c.get('/bff/session', { headers: { Cookie: 'bds_console=Fe26.2*garbage' } });
    expect(forged.status).toBe(401);
  });

  it('throttles per username across IPs with exponential backoff and a clear message', async () => {
    const c = t.anonymous();
    const from = (ip: string) => ({ headers: { 'X-Forwarded-For': ip } });
    for (const ip of ['10.1.0.1', '10.1.0.2']) {
      expect((await c.post('/bff/login', { username: 'victim', password: 'x' }, from(ip))).status).toBe(401);
    }
    // Third failure: locked for 2 s.
    expect((await c.post('/bff/login', { username: 'victim', password: 'x' }, from('10.1.0.3'))).status).toBe(
      401,
    );
    const locked = await c.post(
      '/bff/login',
      { username: 'victim', password: TEST_PASSWORD },
      from('10.1.0.4'),
    );
    expect(locked.status).toBe(429);
    expect(locked.json.code).toBe(155);
    expect(locked.json.error).toMatch(/^Too many login attempts; try again in [12] seconds?\.$/);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 2_100));
    // Fourth failure doubles the delay.
    expect((await c.post('/bff/login', { username: 'victim', password: 'x' }, from('10.1.0.5'))).status).toBe(
      401,
    );
    const again = await c.post(
      '/bff/login',
      { username: 'victim', password: TEST_PASSWORD },
      from('10.1.0.6'),
    );
    expect(again.status).toBe(429);
    expect(again.json.error).toMatch(/try again in [34] seconds/);
    // Another user from a fresh IP is not affected.
    const other = await c.post(
      '/bff/login',
      { username: 'admin', password: TEST_PASSWORD },
      from('10.1.0.7'),
    );
    expect(other.status).toBe(200);
  });

  it('throttles per IP across usernames', async () => {
    const c = t.anonymous();
    const h = { headers: { 'X-Forwarded-For': '10.2.0.1' } };
    for (const username of ['u1', 'u2', 'u3']) {
      expect((await c.post('/bff/login', { username, password: 'x' }, h)).status).toBe(401);
    }
    const res = await c.post('/bff/login', { username: 'admin', password: TEST_PASSWORD }, h);
    expect(res.status).toBe(429);
    expect(res.json.error).toMatch(/Too many login attempts/);
  });

  it('asks for the TOTP code of an enrolled user, then checks it once', async () => {
    const c = t.anonymous();
    const h = { headers: { 'X-Forwarded-For': '10.3.0.1' } };
    const step1 = await c.post('/bff/login', { username: 'mfa', password: TEST_PASSWORD }, h);
    expect(step1.status).toBe(200);
    expect(step1.json).toEqual({ mfaRequired: true });
    expect(step1.headers.getSetCookie()).toEqual([]);
    const wrongCode = await c.post(
      '/bff/login',
      { username: 'mfa', password: TEST_PASSWORD, totp: totp(10) },
      { headers: { 'X-Forwarded-For': '10.3.0.2' } },
    );
    expect(wrongCode.status).toBe(401);
    expect(wrongCode.json).toEqual({ code: 101, error: 'Invalid authentication code.' });
    const code = totp();
    const ok = await c.post('/bff/login', { username: 'mfa', password: TEST_PASSWORD, totp: code }, h);
    expect(ok.status).toBe(200);
    expect(ok.json.user.username).toBe('mfa');
    expect((await c.get('/bff/session')).status).toBe(200);
    // A code cannot be replayed.
    const replay = await t
      .anonymous()
      .post(
        '/bff/login',
        { username: 'mfa', password: TEST_PASSWORD, totp: code },
        { headers: { 'X-Forwarded-For': '10.3.0.3' } },
      );
    expect(replay.status).toBe(401);
    // A right code with a wrong password is still refused.
    const wrongPw = await t
      .anonymous()
      .post(
        '/bff/login',
        { username: 'mfa', password: 'bad', totp: totp() },
        { headers: { 'X-Forwarded-For': '10.3.0.4' } },
      );
    expect(wrongPw.status).toBe(401);
  });

  it('logout destroys the session, and the old cookie no longer works after it', async () => {
    const c = t.anonymous();
    await c.post(
      '/bff/login',
      { username: 'admin', password: TEST_PASSWORD },
      { headers: { 'X-Forwarded-For': '10.4.0.1' } },
    );
    const old = c.cookie;
    expect(old).toMatch(/^bds_console=Fe26\.2\*/);
    // The same cookie in a second jar (a copy taken before logout): it works until the logout.
    const copy = { headers: { Cookie: old } };
    expect((await t.anonymous().get('/bff/session', copy)).status).toBe(200);
    const out = await c.post('/bff/logout');
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie()[0]).toMatch(/bds_console=;.*Max-Age=0/i);
    expect(c.cookie).toBe('');
    expect((await c.get('/bff/session')).json).toEqual({ code: 119, error: 'Not logged in.' });
    // Replaying the cookie kept from before the logout: expired at once, on every route.
    for (const path of ['/bff/session', '/bff/apps', '/bff/apps/test-app/schemas']) {
      const replay = await t.anonymous().get(path, copy);
      expect(replay.status, path).toBe(401);
      expect(replay.json, path).toEqual({ code: 119, error: 'Session expired; log in again.' });
    }
    const write = await t.anonymous().post('/bff/apps/test-app/classes/Replay', { a: 1 }, copy);
    expect(write.status).toBe(401);
    expect(write.json).toEqual({ code: 119, error: 'Session expired; log in again.' });
  });
});

describe('session timeouts (injected clock)', () => {
  // Idle 60 s, absolute 300 s, on a clock the test moves: no real waiting, no timing windows.
  let clock = Date.UTC(2030, 0, 1);
  const advance = (seconds: number) => {
    clock += seconds * 1000;
  };
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff({
      options: { idleTimeoutSeconds: 60, absoluteTimeoutSeconds: 300 },
      deps: { now: () => clock },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('ends a session after the idle timeout, not before', async () => {
    const admin = await t.login('admin');
    advance(60);
    expect((await admin.get('/bff/session')).status).toBe(200);
    // Activity moved the idle timer: 60 s from the last request is still fine.
    advance(60);
    expect((await admin.get('/bff/session')).status).toBe(200);
    advance(60.001);
    const res = await admin.get('/bff/session');
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ code: 119, error: 'Session expired; log in again.' });
  });

  it('once a session expired, every copy of its cookie is refused, however fresh', async () => {
    const a = await t.login('admin');
    // A copy of the cookie that stays active, while the original idles.
    const b = t.anonymous();
    advance(30);
    expect((await b.get('/bff/session', { headers: { Cookie: a.cookie } })).status).toBe(200);
    const fresh = b.cookie;
    expect(fresh).not.toBe(a.cookie);
    advance(30.001);
    expect((await a.get('/bff/session')).json).toEqual({
      code: 119,
      error: 'Session expired; log in again.',
    });
    advance(1);
    const res = await b.get('/bff/session', { headers: { Cookie: fresh } });
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ code: 119, error: 'Session expired; log in again.' });
  });

  it('ends an active session after the absolute timeout, however recent the last request', async () => {
    const admin = await t.login('admin');
    // Requests every 50 s (well inside the 60 s idle timeout) up to exactly 300 s after login.
    for (let elapsed = 50; elapsed <= 300; elapsed += 50) {
      advance(50);
      expect((await admin.get('/bff/session')).status, `${elapsed} s after login`).toBe(200);
    }
    // 1 ms past the absolute timeout, 1 ms after the last request: only the absolute check trips.
    advance(0.001);
    const res = await admin.get('/bff/session');
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ code: 119, error: 'Session expired; log in again.' });
  });
});

/** Logs admin in through a raw request with an arbitrary Host header; the Set-Cookie headers. */
async function rawLogin(url: string, host: string): Promise<string[]> {
  const res = await rawPost(url, '/bff/login', host, { username: 'admin', password: TEST_PASSWORD });
  if (res.status !== 200) throw new Error(`login via ${host}: ${res.status}`);
  return res.setCookie;
}

describe('console sessions on an injected clock', () => {
  // Idle 60 s (the cookie is refreshed at most every 6 s), absolute 300 s.
  let clock = Date.UTC(2031, 0, 1);
  const advance = (seconds: number) => {
    clock += seconds * 1000;
  };
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff({
      users: [
        { username: 'admin', role: 'admin' },
        { username: 'scoped', role: 'read-only', apps: ['test-app'] },
        { username: 'mfa', role: 'admin', mfaSecret: MFA_SECRET },
        { username: 'thr', role: 'admin' },
      ],
      options: {
        idleTimeoutSeconds: 60,
        absoluteTimeoutSeconds: 300,
        trustProxy: true,
        loginThrottle: { freeAttempts: 1, baseDelaySeconds: 1, maxDelaySeconds: 60 },
      },
      deps: { now: () => clock },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refreshes the cookie only once a tenth of the idle timeout has passed', async () => {
    const admin = await t.login('admin');
    advance(5.999);
    const early = await admin.get('/bff/session');
    expect(early.status).toBe(200);
    expect(early.headers.getSetCookie()).toEqual([]);
    advance(0.001);
    const due = await admin.get('/bff/session');
    expect(due.status).toBe(200);
    expect(due.headers.getSetCookie()).toHaveLength(1);
    expect(due.headers.getSetCookie()[0]).toMatch(/^bds_console=Fe26\.2\*/);
  });

  it('logout answers {ok: true}; sign out everywhere clears the cookie even when it was due a refresh', async () => {
    const a = await t.login('admin');
    expect((await a.post('/bff/logout')).json).toEqual({ ok: true });
    const b = await t.login('admin');
    advance(7);
    const res = await b.post('/bff/logout-everywhere');
    expect(res.status).toBe(200);
    const set = res.headers.getSetCookie();
    expect(set).toHaveLength(1);
    expect(set[0]).toMatch(/^bds_console=;.*Max-Age=0/i);
  });

  it('a login drops the records of sessions past the absolute timeout from the file', async () => {
    const file = path.join(t.bff.options.dataDir, SESSIONS_FILE);
    await t.login('admin');
    advance(300.001);
    await t.login('admin');
    const sessions = Object.values(JSON.parse(readFileSync(file, 'utf8')).sessions) as Array<{
      createdAt: number;
    }>;
    expect(sessions.map((s) => s.createdAt)).toEqual([clock]);
  });

  it('answers the apps of a console user limited to some', async () => {
    const scoped = await t.login('scoped');
    expect((await scoped.get('/bff/session')).json).toEqual({
      user: { username: 'scoped', role: 'read-only', apps: ['test-app'] },
    });
  });

  it('a TOTP code must be exactly six digits; a body that is not an object is named as the body', async () => {
    const c = t.anonymous();
    for (const totp of ['12345', '1234567', 'a123456', '123456 ']) {
      const res = await c.post('/bff/login', { username: 'mfa', password: TEST_PASSWORD, totp });
      expect(res.status, totp).toBe(400);
      expect(res.json, totp).toEqual({
        code: 107,
        error: 'Invalid login request: totp must be a 6-digit code.',
      });
    }
    const arr = await c.post('/bff/login', []);
    expect(arr.status).toBe(400);
    expect(arr.json.code).toBe(107);
    expect(arr.json.error).toMatch(/^Invalid login request: body /);
  });

  it('accepts the code of the previous time step, and the current one after it', async () => {
    // Stay clear of a 30 s boundary while the two codes are made and checked.
    const intoStep = Date.now() % 30_000;
    if (intoStep > 25_000) await new Promise((r) => setTimeout(r, 30_500 - intoStep));
    const code = (offset: number) =>
      new TOTP({ secret: Secret.fromBase32(MFA_SECRET) }).generate({
        timestamp: Date.now() + offset * 30_000,
      });
    const previous = await t.anonymous().post('/bff/login', {
      username: 'mfa',
      password: TEST_PASSWORD,
      totp: code(-1),
    });
    expect(previous.status).toBe(200);
    const current = await t.anonymous().post('/bff/login', {
      username: 'mfa',
      password: TEST_PASSWORD,
      totp: code(0),
    });
    expect(current.status).toBe(200);
    // Neither can be used again.
    const replayed = await t.anonymous().post('/bff/login', {
      username: 'mfa',
      password: TEST_PASSWORD,
      totp: code(0),
    });
    expect(replayed.json).toEqual({ code: 101, error: 'Invalid authentication code.' });
  });

  it('says "1 second" in the singular, and a successful login resets the user count', async () => {
    const c = t.anonymous();
    const from = (ip: string) => ({ headers: { 'X-Forwarded-For': ip } });
    const attempt = (password: string, ip: string) =>
      c.post('/bff/login', { username: 'thr', password }, from(ip));
    expect((await attempt('wrong', '10.9.0.1')).status).toBe(401);
    // Second failure of the user (one free attempt): locked for 1 s.
    expect((await attempt('wrong', '10.9.0.2')).status).toBe(401);
    const locked = await attempt(TEST_PASSWORD, '10.9.0.3');
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('1');
    expect(locked.json).toEqual({ code: 155, error: 'Too many login attempts; try again in 1 second.' });
    advance(1);
    expect((await attempt(TEST_PASSWORD, '10.9.0.4')).status).toBe(200);
    // The success forgot the user's failures: one more failure is free again.
    expect((await attempt('wrong', '10.9.0.5')).status).toBe(401);
    expect((await attempt(TEST_PASSWORD, '10.9.0.6')).status).toBe(200);
  });

  it('counts localhost, loopback addresses and *.localhost as local (no Secure flag), nothing else', async () => {
    for (const host of ['localhost', '127.0.0.1', '[::1]', 'console.localhost']) {
      const [cookie] = await rawLogin(t.url, host);
      expect(cookie, host).not.toMatch(/;\s*Secure/i);
    }
    for (const host of ['localhost.example.com', 'example.localhost.com']) {
      const [cookie] = await rawLogin(t.url, host);
      expect(cookie, host).toMatch(/;\s*Secure/i);
    }
  });
});

describe('secureCookies set explicitly', () => {
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff({ options: { secureCookies: true } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('true marks the cookie Secure on localhost too', async () => {
    const [cookie] = await rawLogin(t.url, 'localhost');
    expect(cookie).toMatch(/;\s*Secure/i);
  });
});
