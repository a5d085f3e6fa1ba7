import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bff, createBff } from '../src/index.ts';
import type { ConsoleUserConfig } from '../src/options.ts';
import { hashPassword } from '../src/passwords.ts';
import { MAX_SESSIONS_PER_USER, SESSIONS_FILE, SessionStore } from '../src/session.ts';
import { type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

/**
 * Server-side console sessions: logout, "sign out everywhere", and a console user's removal or
 * password change end every cookie issued before, at once. A replayed cookie answers exactly
 * what an expired session answers.
 */
const EXPIRED = { code: 119, error: 'Session expired; log in again.' };

/** A request carrying exactly this cookie (a copy kept by someone else). */
async function replay(url: string, cookie: string, p = '/bff/session', method = 'GET') {
  const headers: Record<string, string> = { Cookie: cookie };
  if (method !== 'GET') Object.assign(headers, { 'X-Console-CSRF': '1', Origin: url });
  const res = await fetch(`${url}${p}`, { method, headers });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

describe('logout and sign out everywhere', () => {
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff({
      users: [
        { username: 'admin', role: 'admin' },
        { username: 'viewer', role: 'read-only' },
        { username: 'other', role: 'admin' },
      ],
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a plain logout ends that session only: its copies expire, other browsers of the user stay in', async () => {
    const a = await t.login('admin');
    const b = await t.login('admin');
    const copyOfA = a.cookie;
    expect((await replay(t.url, copyOfA)).status).toBe(200);
    expect((await a.post('/bff/logout')).status).toBe(200);
    expect(await replay(t.url, copyOfA)).toEqual({ status: 401, json: EXPIRED });
    expect(await replay(t.url, copyOfA, '/bff/apps')).toEqual({ status: 401, json: EXPIRED });
    // Logging out again with the copy changes nothing and does not bring it back.
    expect((await replay(t.url, copyOfA, '/bff/logout', 'POST')).status).toBe(200);
    expect(await replay(t.url, copyOfA)).toEqual({ status: 401, json: EXPIRED });
    expect((await b.get('/bff/session')).json).toEqual({ user: { username: 'admin', role: 'admin' } });
    expect((await b.get('/bff/apps')).status).toBe(200);
  });

  it('a new login in the same browser ends the session the browser had', async () => {
    const c = await t.login('admin');
    const before = c.cookie;
    expect((await c.post('/bff/login', { username: 'admin', password: TEST_PASSWORD })).status).toBe(200);
    expect(c.cookie).not.toBe(before);
    expect((await c.get('/bff/session')).status).toBe(200);
    expect(await replay(t.url, before)).toEqual({ status: 401, json: EXPIRED });
  });

  it("sign out everywhere ends every session of the user at once, and no one else's", async () => {
    const browsers = [await t.login('admin'), await t.login('admin'), await t.login('admin')];
    const copies = browsers.map((b) => b.cookie);
    const other = await t.login('other');
    const viewer = await t.login('viewer');
    const res = await browsers[0]!.post('/bff/logout-everywhere');
    expect(res.status).toBe(200);
    expect(res.json.ok).toBe(true);
    expect(res.json.ended).toBeGreaterThanOrEqual(3);
    // The caller's cookie is cleared, and only cleared (no refreshed seal next to it).
    const set = res.headers.getSetCookie();
    expect(set).toHaveLength(1);
    expect(set[0]).toMatch(/^bds_console=;.*Max-Age=0/i);
    for (const [i, cookie] of copies.entries()) {
      expect(await replay(t.url, cookie), `browser ${i}`).toEqual({ status: 401, json: EXPIRED });
      expect(await replay(t.url, cookie, '/bff/apps/test-app/schemas'), `browser ${i}`).toEqual({
        status: 401,
        json: EXPIRED,
      });
    }
    expect((await browsers[1]!.get('/bff/session')).json).toEqual(EXPIRED);
    expect((await other.get('/bff/session')).status).toBe(200);
    expect((await viewer.get('/bff/session')).status).toBe(200);
    // A new login works as before.
    const again = await t.login('admin');
    expect((await again.get('/bff/session')).status).toBe(200);
  });

  it('sign out everywhere is an admin route: read-only users get the read-only 403, anonymous callers 401', async () => {
    const v1 = await t.login('viewer');
    const v2 = await t.login('viewer');
    const res = await v1.post('/bff/logout-everywhere');
    expect(res.status).toBe(403);
    expect(res.json).toEqual({ code: 119, error: 'Read-only console users cannot change anything.' });
    expect((await v1.get('/bff/session')).status).toBe(200);
    expect((await v2.get('/bff/session')).status).toBe(200);
    const anon = await t.anonymous().post('/bff/logout-everywhere');
    expect(anon.status).toBe(401);
    expect(anon.json).toEqual({ code: 119, error: 'Not logged in.' });
  });

  it('refuses sign out everywhere without the CSRF header', async () => {
    const admin = await t.login('admin');
    const res = await admin.post('/bff/logout-everywhere', undefined, { csrf: false });
    expect(res.status).toBe(403);
    expect((await admin.get('/bff/session')).status).toBe(200);
  });

  it('keeps the records in a 0600 file of the data dir, without usernames in the cookie', async () => {
    const admin = await t.login('admin');
    const file = path.join(t.bff.options.dataDir, SESSIONS_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    const records = Object.values(stored.sessions) as { username: string; credential: string }[];
    expect(records.some((r) => r.username === 'admin')).toBe(true);
    // Neither the password hash nor the password is stored there.
    expect(JSON.stringify(stored)).not.toContain('scrypt$');
    expect(JSON.stringify(stored)).not.toContain(TEST_PASSWORD);
    expect(admin.cookie).not.toContain('admin');
  });

  it(`keeps at most ${MAX_SESSIONS_PER_USER} sessions per user, ending the oldest`, () => {
    // The store alone (a login per session would spend seconds in scrypt).
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-sessions-'));
    try {
      const store = new SessionStore(dir, () => true);
      const ids = Array.from({ length: MAX_SESSIONS_PER_USER }, (_, i) => store.create('u', 1000 + i, 'c'));
      const someoneElse = store.create('v', 0, 'c');
      expect(ids.every((id) => store.get(id))).toBe(true);
      const newest = store.create('u', 5000, 'c');
      expect(store.get(ids[0]!)).toBeUndefined();
      expect(ids.slice(1).every((id) => store.get(id))).toBe(true);
      expect(store.get(newest)).toEqual({ username: 'u', createdAt: 5000, credential: 'c' });
      expect(store.get(someoneElse)).toBeDefined();
      // What a restart reads back.
      const reread = new SessionStore(dir, () => true);
      expect(reread.get(newest)).toEqual({ username: 'u', createdAt: 5000, credential: 'c' });
      expect(reread.get(ids[0]!)).toBeUndefined();
      expect(reread.deleteUser('u')).toBe(MAX_SESSIONS_PER_USER);
      expect(new SessionStore(dir, () => true).get(newest)).toBeUndefined();
      expect(new SessionStore(dir, () => true).get(someoneElse)).toBeDefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('removal or password change of a console user (config change, then restart)', () => {
  let t: StartedBff;
  const extra: Bff[] = [];
  let base: ConsoleUserConfig[];
  beforeAll(async () => {
    t = await startBff({
      users: [
        { username: 'admin', role: 'admin' },
        { username: 'alice', role: 'admin' },
        { username: 'bob', role: 'read-only' },
      ],
    });
    base = t.bff.options.consoleUsers;
  });
  afterAll(async () => {
    for (const b of extra) await b.close();
    await t?.close();
  });

  /** Stops the running bff and starts one on the same data dir with these console users. */
  async function restart(consoleUsers: ConsoleUserConfig[]): Promise<string> {
    for (const b of extra) await b.close();
    await t.bff.close();
    const b = await createBff({ ...t.bff.options, consoleUsers }, { logStream: { write() {} } as never });
    extra.push(b);
    const { url } = await b.listen(0, '127.0.0.1');
    return url;
  }

  it('ends the sessions of a user whose password or MFA secret changed, or who was removed; others survive the restart', async () => {
    const admin = (await t.login('admin')).cookie;
    const alice = (await t.login('alice')).cookie;
    const bob = (await t.login('bob')).cookie;

    // Unchanged config: every session survives a restart.
    let url = await restart(base);
    for (const cookie of [admin, alice, bob]) expect((await replay(url, cookie)).status).toBe(200);

    // alice gets a new password (a new `console:user add` entry), bob is removed.
    const newHash = await hashPassword('a brand new password 123');
    url = await restart([
      base.find((u) => u.username === 'admin')!,
      { ...base.find((u) => u.username === 'alice')!, passwordHash: newHash },
    ]);
    expect(await replay(url, alice)).toEqual({ status: 401, json: EXPIRED });
    expect(await replay(url, alice, '/bff/apps')).toEqual({ status: 401, json: EXPIRED });
    expect(await replay(url, bob)).toEqual({ status: 401, json: EXPIRED });
    expect((await replay(url, admin)).status).toBe(200);

    // Putting the old password back does not revive the old session (its record is gone).
    url = await restart(base);
    expect(await replay(url, alice)).toEqual({ status: 401, json: EXPIRED });
    expect(await replay(url, bob)).toEqual({ status: 401, json: EXPIRED });
    expect((await replay(url, admin)).status).toBe(200);

    // An MFA secret added to a user ends their sessions too.
    const login = await fetch(`${url}/bff/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1', Origin: url },
      body: JSON.stringify({ username: 'alice', password: TEST_PASSWORD }),
    });
    expect(login.status).toBe(200);
    const alice2 = login.headers.getSetCookie()[0]!.split(';')[0]!;
    expect((await replay(url, alice2)).status).toBe(200);
    url = await restart(
      base.map((u) => (u.username === 'alice' ? { ...u, mfaSecret: 'JBSWY3DPEHPK3PXPJBSWY3DP' } : u)),
    );
    expect(await replay(url, alice2)).toEqual({ status: 401, json: EXPIRED });
    expect((await replay(url, admin)).status).toBe(200);
  });

  it('a lost or corrupt sessions file ends every session (fail closed)', async () => {
    const url0 = await restart(base);
    const login = await fetch(`${url0}/bff/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1', Origin: url0 },
      body: JSON.stringify({ username: 'admin', password: TEST_PASSWORD }),
    });
    const cookie = login.headers.getSetCookie()[0]!.split(';')[0]!;
    expect((await replay(url0, cookie)).status).toBe(200);
    for (const b of extra) await b.close();
    writeFileSync(path.join(t.bff.options.dataDir, SESSIONS_FILE), '{ not json');
    const url = await restart(base);
    expect(await replay(url, cookie)).toEqual({ status: 401, json: EXPIRED });
    // A new login works and writes a good file; deleting that file ends the session too.
    const again = await fetch(`${url}/bff/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1', Origin: url },
      body: JSON.stringify({ username: 'admin', password: TEST_PASSWORD }),
    });
    expect(again.status).toBe(200);
    const cookie2 = again.headers.getSetCookie()[0]!.split(';')[0]!;
    expect((await replay(url, cookie2)).status).toBe(200);
    for (const b of extra) await b.close();
    rmSync(path.join(t.bff.options.dataDir, SESSIONS_FILE));
    const url2 = await restart(base);
    expect(await replay(url2, cookie2)).toEqual({ status: 401, json: EXPIRED });
  });
});
