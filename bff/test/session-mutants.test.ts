import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  credentialOf,
  MAX_SESSIONS_PER_USER,
  resolveSessionSecret,
  SESSION_SECRET_FILE,
  SESSIONS_FILE,
  SessionStore,
} from '../src/session.ts';
import { type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

/**
 * Console session behaviour that mutation testing (`npm run test:mutation`) found unchecked: the
 * session secret file, how the records file is loaded and pruned, when the cookie is refreshed,
 * which hosts count as local, the login body rules, the throttle wording and reset, and TOTP
 * codes of the previous time step.
 */

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bds-session-mutants-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('credentialOf', () => {
  it('is the first 22 base64url characters of sha256(passwordHash NUL mfaSecret)', () => {
    const expected = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 22);
    expect(credentialOf({ passwordHash: 'h1' })).toBe(expected('h1\0'));
    expect(credentialOf({ passwordHash: 'h1', mfaSecret: 'S' })).toBe(expected('h1\0S'));
    expect(credentialOf({ passwordHash: 'h1' })).toHaveLength(22);
  });
});

describe('resolveSessionSecret', () => {
  it('uses the configured secret and writes no file', () => {
    const dataDir = tempDir();
    const secret = 'x'.repeat(40);
    expect(resolveSessionSecret({ sessionSecret: secret, dataDir })).toBe(secret);
    expect(() => statSync(path.join(dataDir, SESSION_SECRET_FILE))).toThrow(/ENOENT/);
  });

  it('generates one secret into <dataDir>/console-session-secret (0600) and keeps it', () => {
    const dataDir = path.join(tempDir(), 'nested', 'data');
    const first = resolveSessionSecret({ dataDir });
    expect(SESSION_SECRET_FILE).toBe('console-session-secret');
    const file = path.join(dataDir, 'console-session-secret');
    expect(readFileSync(file, 'utf8')).toBe(`${first}\n`);
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(resolveSessionSecret({ dataDir })).toBe(first);
  });

  it('tightens a readable secret file to 0600 and trims it', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, SESSION_SECRET_FILE);
    writeFileSync(file, `  ${'s'.repeat(32)}  \n`);
    chmodSync(file, 0o644);
    expect(resolveSessionSecret({ dataDir })).toBe('s'.repeat(32));
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('refuses a secret shorter than 32 characters and any error other than a missing file', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, SESSION_SECRET_FILE);
    writeFileSync(file, `${'s'.repeat(31)}\n`, { mode: 0o600 });
    expect(() => resolveSessionSecret({ dataDir })).toThrow(
      `${file} holds a session secret shorter than 32 characters`,
    );
    const other = tempDir();
    mkdirSync(path.join(other, SESSION_SECRET_FILE));
    expect(() => resolveSessionSecret({ dataDir: other })).toThrow(/EISDIR/);
  });
});

describe('SessionStore', () => {
  const record = (username: string, createdAt: number, credential = 'c') => ({
    username,
    createdAt,
    credential,
  });

  it('loads only well-formed, valid records, and rewrites the file only when it dropped some', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, SESSIONS_FILE);
    const good = { a: record('ann', 1), b: record('bob', 2) };
    const pretty = `${JSON.stringify({ sessions: good }, null, 2)}\n`;
    writeFileSync(file, pretty);
    const store = new SessionStore(dataDir, () => true);
    expect(store.get('a')).toEqual(record('ann', 1));
    expect(store.get('b')).toEqual(record('bob', 2));
    // Nothing dropped: the file is left exactly as it was.
    expect(readFileSync(file, 'utf8')).toBe(pretty);

    writeFileSync(
      file,
      JSON.stringify({
        sessions: {
          ...good,
          nul: null,
          noName: { createdAt: 1, credential: 'c' },
          badTime: { username: 'x', createdAt: '1', credential: 'c' },
          badCredential: { username: 'x', createdAt: 1, credential: 5 },
          expired: record('old', 0),
        },
      }),
    );
    const pruned = new SessionStore(dataDir, (r) => r.createdAt > 0);
    for (const sid of ['nul', 'noName', 'badTime', 'badCredential', 'expired']) {
      expect(pruned.get(sid), sid).toBeUndefined();
    }
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ sessions: good });
  });

  it('starts empty on a file without sessions, and throws on an unreadable one', () => {
    for (const content of ['{}', '{"sessions":null}']) {
      const dataDir = tempDir();
      writeFileSync(path.join(dataDir, SESSIONS_FILE), content);
      const store = new SessionStore(dataDir, () => true);
      expect(store.get('0'), content).toBeUndefined();
      expect(readFileSync(path.join(dataDir, SESSIONS_FILE), 'utf8'), content).toBe(content);
    }
    const dataDir = tempDir();
    mkdirSync(path.join(dataDir, SESSIONS_FILE));
    expect(() => new SessionStore(dataDir, () => true)).toThrow(/EISDIR/);
  });

  it('a new session drops records that are no longer valid, and evicts the oldest by creation time', () => {
    const dataDir = tempDir();
    let cutoff = 0;
    const store = new SessionStore(dataDir, (r) => r.createdAt >= cutoff);
    const stale = store.create('ann', 5, 'c');
    cutoff = 10;
    const fresh = store.create('bob', 10, 'c');
    expect(store.get(stale)).toBeUndefined();
    expect(Object.keys(JSON.parse(readFileSync(path.join(dataDir, SESSIONS_FILE), 'utf8')).sessions)).toEqual(
      [fresh],
    );

    // Created out of order: the one with the smallest createdAt goes first, not the first inserted.
    const ids: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i++)
      ids.push(store.create('cat', i === 0 ? 1000 : 100 + i, 'c'));
    const next = store.create('cat', 2000, 'c');
    expect(store.get(ids[1]!)).toBeUndefined();
    expect(store.get(ids[0]!)).toEqual(record('cat', 1000));
    expect(store.get(next)).toEqual(record('cat', 2000));
    expect(store.get(fresh)).toEqual(record('bob', 10));
  });
});

/** A raw request with an arbitrary Host header (fetch does not let us set it). */
function rawLogin(url: string, host: string) {
  return new Promise<string[]>((resolve, reject) => {
    const u = new URL(url);
    const data = JSON.stringify({ username: 'admin', password: TEST_PASSWORD });
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path: '/bff/login',
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
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`login via ${host}: ${res.statusCode}`));
          else resolve(res.headers['set-cookie'] ?? []);
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const MFA_SECRET = new Secret({ size: 20 }).base32;

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
