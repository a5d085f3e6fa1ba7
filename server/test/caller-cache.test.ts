import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { MASTER } from '../src/kernel/caller.ts';
import { createClass, createRole, createRow, createUser, pointer } from './helpers/access-world.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * The session and role caches of the caller resolver (server/src/auth/caller.ts), through the real
 * service: a token is looked up once, and every change that can make a cached answer wrong (a
 * revoked or changed session, a purge, a role change, a rollback, a change that lands while a lookup
 * runs) makes the next request see the store again. Cache hits are observed by counting the calls
 * of the real lookup functions (`service.data.lookups`), which still answer as they do.
 */

const INVALID = { code: 209, error: 'Invalid session token' };
const NOT_FOUND = { code: 101, error: 'Object not found.' };
const HOUR = 3_600_000;

type LookupName = 'sessionByToken' | 'rolesOf';

interface Observed {
  /** How many times the real lookup ran for `arg` (a token or a user id). */
  count(arg: string): number;
  /**
   * Holds the next lookup of `arg` once the store has answered it: `reached` resolves then, and
   * the lookup returns that answer only after `release()` (so a write can land in between).
   */
  hold(arg: string): { reached: Promise<void>; release(): void };
}

const restores: Array<() => void> = [];
afterEach(() => {
  for (const restore of restores.splice(0)) restore();
  vi.restoreAllMocks();
});

/** Wraps the real lookup with a counter (and an optional hold); restored after each test. */
function observe(t: TestService, name: LookupName): Observed {
  const lookups = t.service.data.lookups as unknown as Record<LookupName, (arg: string) => Promise<unknown>>;
  const real = lookups[name].bind(lookups);
  const calls: string[] = [];
  const holds = new Map<string, { reached: () => void; gate: Promise<void> }>();
  lookups[name] = async (arg: string) => {
    calls.push(arg);
    const answer = await real(arg);
    const held = holds.get(arg);
    if (held) {
      holds.delete(arg);
      held.reached();
      await held.gate;
    }
    return answer;
  };
  restores.push(() => {
    delete (lookups as Partial<typeof lookups>)[name];
  });
  return {
    count: (arg) => calls.filter((c) => c === arg).length,
    hold(arg) {
      let reached!: () => void;
      let release!: () => void;
      const reachedP = new Promise<void>((r) => {
        reached = r;
      });
      const gate = new Promise<void>((r) => {
        release = r;
      });
      holds.set(arg, { reached, gate });
      return { reached: reachedP, release };
    },
  };
}

const newToken = () => `r:${randomBytes(16).toString('hex')}`;
const inAnHour = () => ({ __type: 'Date', iso: new Date(Date.now() + HOUR).toISOString() });
let names = 0;
const uniqueName = (prefix: string) => `${prefix}${Date.now()}x${names++}`;

/** A _Session row written by the master key through POST /sessions; `fields` override the defaults. */
async function addSession(
  t: TestService,
  userId: string,
  fields: Record<string, unknown> = {},
): Promise<{ objectId: string; token: string }> {
  const token = newToken();
  const body = { user: pointer('_User', userId), sessionToken: token, expiresAt: inAnHour(), ...fields };
  const res = await t.request('POST', '/sessions', { as: 'master', body });
  expect(res.status, res.text).toBe(201);
  return { objectId: res.json.objectId as string, token };
}

const me = (t: TestService, token: string) => t.request('GET', '/users/me', { sessionToken: token });

async function expectSignedIn(t: TestService, token: string, userId: string): Promise<void> {
  const res = await me(t, token);
  expect(res.status, res.text).toBe(200);
  expect(res.json.objectId).toBe(userId);
  expect(res.json.sessionToken).toBe(token);
}

async function expectRefused(t: TestService, token: string): Promise<void> {
  const res = await me(t, token);
  expect(res.status).toBe(400);
  expect(res.json).toEqual(INVALID);
}

/** A transaction batch whose second member fails: the first member's write is rolled back. */
async function rolledBackBatch(t: TestService): Promise<void> {
  const count = async () =>
    (await t.request('GET', '/classes/Note', { as: 'master', query: { count: 1, limit: 0 } })).json
      .count as number;
  const before = await count();
  const res = await t.request('POST', '/batch', {
    as: 'master',
    body: {
      transaction: true,
      requests: [
        { method: 'POST', path: '/classes/Note', body: { text: 'rolled back' } },
        { method: 'PUT', path: '/classes/Note/doesNotExist', body: { text: 'x' } },
      ],
    },
  });
  expect(res.status).toBe(404);
  expect(res.json).toEqual(NOT_FOUND);
  expect(await count()).toBe(before);
}

describe('the caller cache of one service', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
    await createClass(t, 'Note', { text: { type: 'String' } });
    await createRow(t, 'Note', { text: 'kept' });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('expiry', () => {
    it('a session whose expiresAt is past is refused with 209 Invalid session token', async () => {
      const user = await createUser(t);
      const past = { __type: 'Date', iso: new Date(Date.now() - 1000).toISOString() };
      const s = await addSession(t, user.id, { expiresAt: past });
      await expectRefused(t, s.token);
    });

    it('a session ends at its expiresAt to the millisecond, cached or not', async () => {
      const user = await createUser(t);
      const at = Date.now() + 60_000;
      const s = await addSession(t, user.id, {
        expiresAt: { __type: 'Date', iso: new Date(at).toISOString() },
      });
      const now = vi.spyOn(Date, 'now').mockReturnValue(at - 1);
      await expectSignedIn(t, s.token, user.id);
      now.mockReturnValue(at);
      await expectRefused(t, s.token);
    });

    it('a _Session row without a user is refused with 209 Invalid session token', async () => {
      const token = newToken();
      const res = await t.request('POST', '/sessions', {
        as: 'master',
        body: { sessionToken: token, expiresAt: inAnHour() },
      });
      expect(res.status, res.text).toBe(201);
      // Refused before anything runs: a public read answers 209 as well, not the rows.
      const read = await t.request('GET', '/classes/Note', { sessionToken: token });
      expect(read.status).toBe(400);
      expect(read.json).toEqual(INVALID);
      await expectRefused(t, token);
    });

    it('a session without expiresAt never expires', async () => {
      const user = await createUser(t);
      const s = await addSession(t, user.id, { expiresAt: undefined });
      const stored = await t.request('GET', `/sessions/${s.objectId}`, { as: 'master' });
      expect(stored.json.expiresAt).toBeUndefined();
      await expectSignedIn(t, s.token, user.id);
      await expectSignedIn(t, s.token, user.id);
    });
  });

  describe('cache hits', () => {
    it('a token is looked up once, and stays cached while other tokens are cached', async () => {
      const a = await createUser(t);
      const b = await createUser(t);
      const sessions = observe(t, 'sessionByToken');
      await expectSignedIn(t, a.token, a.id);
      await expectSignedIn(t, a.token, a.id);
      expect(sessions.count(a.token)).toBe(1);
      await expectSignedIn(t, b.token, b.id);
      await expectSignedIn(t, a.token, a.id);
      await expectSignedIn(t, b.token, b.id);
      expect(sessions.count(a.token)).toBe(1);
      expect(sessions.count(b.token)).toBe(1);
    });

    it('a user’s roles are looked up once for all of its sessions', async () => {
      const user = await createUser(t);
      const second = await addSession(t, user.id);
      const roles = observe(t, 'rolesOf');
      const sessions = observe(t, 'sessionByToken');
      await expectSignedIn(t, user.token, user.id);
      await expectSignedIn(t, second.token, user.id);
      await expectSignedIn(t, user.token, user.id);
      expect(sessions.count(second.token)).toBe(1);
      expect(roles.count(user.id)).toBe(1);
    });
  });

  describe('session changes', () => {
    it('deleting one _Session row refuses its token at once and keeps the other cached sessions', async () => {
      const a = await createUser(t);
      const b = await createUser(t);
      const s = await addSession(t, a.id);
      const sessions = observe(t, 'sessionByToken');
      await expectSignedIn(t, s.token, a.id);
      await expectSignedIn(t, b.token, b.id);
      const del = await t.request('DELETE', `/sessions/${s.objectId}`, { as: 'master' });
      expect(del.status).toBe(200);
      expect(del.json).toEqual({});
      await expectRefused(t, s.token);
      await expectSignedIn(t, b.token, b.id);
      expect(sessions.count(b.token)).toBe(1);
      expect(sessions.count(s.token)).toBe(2);
    });

    it('updating one _Session row applies at once and keeps the other cached sessions', async () => {
      const a = await createUser(t);
      const other = await createUser(t);
      const b = await createUser(t);
      const moved = await addSession(t, a.id);
      const ended = await addSession(t, a.id);
      const sessions = observe(t, 'sessionByToken');
      await expectSignedIn(t, moved.token, a.id);
      await expectSignedIn(t, ended.token, a.id);
      await expectSignedIn(t, b.token, b.id);

      const move = await t.request('PUT', `/sessions/${moved.objectId}`, {
        as: 'master',
        body: { user: pointer('_User', other.id) },
      });
      expect(move.status, move.text).toBe(200);
      await expectSignedIn(t, moved.token, other.id);

      const past = { __type: 'Date', iso: new Date(Date.now() - 1000).toISOString() };
      const end = await t.request('PUT', `/sessions/${ended.objectId}`, {
        as: 'master',
        body: { expiresAt: past },
      });
      expect(end.status, end.text).toBe(200);
      await expectRefused(t, ended.token);

      await expectSignedIn(t, b.token, b.id);
      expect(sessions.count(b.token)).toBe(1);
    });

    it('a change to a _Session row without a token drops every cached session', async () => {
      const user = await createUser(t);
      const sessions = observe(t, 'sessionByToken');
      await expectSignedIn(t, user.token, user.id);
      const bare = await t.request('POST', '/sessions', {
        as: 'master',
        body: { user: pointer('_User', user.id) },
      });
      expect(bare.status, bare.text).toBe(201);
      await expectSignedIn(t, user.token, user.id);
      expect(sessions.count(user.token)).toBe(1);
      const del = await t.request('DELETE', `/sessions/${bare.json.objectId}`, { as: 'master' });
      expect(del.status).toBe(200);
      await expectSignedIn(t, user.token, user.id);
      expect(sessions.count(user.token)).toBe(2);
    });

    it('a new session and writes to other classes keep the cached sessions', async () => {
      const user = await createUser(t);
      const sessions = observe(t, 'sessionByToken');
      await expectSignedIn(t, user.token, user.id);
      await addSession(t, user.id);
      await expectSignedIn(t, user.token, user.id);
      const note = await t.request('POST', '/classes/Note', { as: 'master', body: { text: 'a' } });
      expect(note.status).toBe(201);
      const put = await t.request('PUT', `/classes/Note/${note.json.objectId}`, {
        as: 'master',
        body: { text: 'b' },
      });
      expect(put.status).toBe(200);
      const del = await t.request('DELETE', `/classes/Note/${note.json.objectId}`, { as: 'master' });
      expect(del.status).toBe(200);
      await expectSignedIn(t, user.token, user.id);
      expect(sessions.count(user.token)).toBe(1);
    });
  });

  describe('role changes', () => {
    it('a _Role change drops cached roles and the callers built with them', async () => {
      const user = await createUser(t);
      const name = uniqueName('Grant');
      const role = await createRole(t, name);
      const row = await createRow(t, 'Note', { text: 'secret', ACL: { [`role:${name}`]: { read: true } } });
      const read = () => t.request('GET', `/classes/Note/${row}`, { sessionToken: user.token });
      const denied = await read();
      expect(denied.status).toBe(404);
      expect(denied.json).toEqual(NOT_FOUND);
      const add = await t.request('PUT', `/roles/${role}`, {
        as: 'master',
        body: { users: { __op: 'AddRelation', objects: [pointer('_User', user.id)] } },
      });
      expect(add.status, add.text).toBe(200);
      const allowed = await read();
      expect(allowed.status).toBe(200);
      expect(allowed.json.text).toBe('secret');
    });
  });

  describe('a change that lands while a lookup runs', () => {
    it('a role granted while the roles of a request are read is seen by the next request', async () => {
      const user = await createUser(t);
      const name = uniqueName('Late');
      const role = await createRole(t, name);
      const row = await createRow(t, 'Note', { text: 'late', ACL: { [`role:${name}`]: { read: true } } });
      const read = () => t.request('GET', `/classes/Note/${row}`, { sessionToken: user.token });
      const roles = observe(t, 'rolesOf');
      const held = roles.hold(user.id);
      const inFlight = read();
      await held.reached;
      const add = await t.request('PUT', `/roles/${role}`, {
        as: 'master',
        body: { users: { __op: 'AddRelation', objects: [pointer('_User', user.id)] } },
      });
      expect(add.status, add.text).toBe(200);
      held.release();
      // The request in flight answers with the roles it read before the grant.
      const first = await inFlight;
      expect(first.status).toBe(404);
      expect(first.json).toEqual(NOT_FOUND);
      const next = await read();
      expect(next.status).toBe(200);
      expect(next.json.text).toBe('late');
      expect(roles.count(user.id)).toBe(2);
    });

    it('a session revoked while its lookup runs is refused on the next request', async () => {
      const user = await createUser(t);
      const s = await addSession(t, user.id);
      const sessions = observe(t, 'sessionByToken');
      const held = sessions.hold(s.token);
      const inFlight = me(t, s.token);
      await held.reached;
      expect((await t.request('DELETE', `/sessions/${s.objectId}`, { as: 'master' })).status).toBe(200);
      held.release();
      // The request in flight read the row before the revocation.
      expect((await inFlight).status).toBe(200);
      await expectRefused(t, s.token);
      expect(sessions.count(s.token)).toBe(2);
    });

    it('a revocation then a role change during the lookup: the answer is still not kept', async () => {
      const user = await createUser(t);
      const s = await addSession(t, user.id);
      const sessions = observe(t, 'sessionByToken');
      const held = sessions.hold(s.token);
      const inFlight = me(t, s.token);
      await held.reached;
      expect((await t.request('DELETE', `/sessions/${s.objectId}`, { as: 'master' })).status).toBe(200);
      await createRole(t, uniqueName('During'));
      held.release();
      expect((await inFlight).status).toBe(200);
      await expectRefused(t, s.token);
    });

    it('a revocation then a rollback during the lookup: the answer is still not kept', async () => {
      const user = await createUser(t);
      const s = await addSession(t, user.id);
      const sessions = observe(t, 'sessionByToken');
      const held = sessions.hold(s.token);
      const inFlight = me(t, s.token);
      await held.reached;
      expect((await t.request('DELETE', `/sessions/${s.objectId}`, { as: 'master' })).status).toBe(200);
      await rolledBackBatch(t);
      held.release();
      expect((await inFlight).status).toBe(200);
      await expectRefused(t, s.token);
    });
  });

  describe('rollback', () => {
    it('a rolled-back transaction forgets the cached sessions and roles', async () => {
      const user = await createUser(t);
      const sessions = observe(t, 'sessionByToken');
      const roles = observe(t, 'rolesOf');
      await expectSignedIn(t, user.token, user.id);
      await expectSignedIn(t, user.token, user.id);
      expect(sessions.count(user.token)).toBe(1);
      expect(roles.count(user.id)).toBe(1);
      await rolledBackBatch(t);
      await expectSignedIn(t, user.token, user.id);
      expect(sessions.count(user.token)).toBe(2);
      expect(roles.count(user.id)).toBe(2);
    });
  });

  describe('installation ids', () => {
    const register = (token: string, body: Record<string, unknown>, installationId?: string) =>
      t.request('POST', '/installations', {
        sessionToken: token,
        headers: installationId ? { 'X-Backend-Installation-Id': installationId } : {},
        body,
      });

    it('a caller with an installation id is not the cached plain caller, nor cached as it', async () => {
      const user = await createUser(t);
      const device = uniqueName('dev-a-');
      const other = uniqueName('dev-b-');
      await expectSignedIn(t, user.token, user.id);

      // The header's id is the caller's: the plain caller cached for the token has none.
      const withHeader = await register(user.token, { deviceType: 'ios' }, device);
      expect(withHeader.status, withHeader.text).toBe(201);
      const row = await t.request('GET', `/installations/${withHeader.json.objectId}`, { as: 'master' });
      expect(row.json.installationId).toBe(device);

      // The plain caller of the token still has none: a body id needs no matching header.
      const plain = await register(user.token, { deviceType: 'android', installationId: other });
      expect(plain.status, plain.text).toBe(201);
      const plainRow = await t.request('GET', `/installations/${plain.json.objectId}`, { as: 'master' });
      expect(plainRow.json.installationId).toBe(other);

      const missing = await register(user.token, { deviceType: 'android' });
      expect(missing.status).toBe(400);
      expect(missing.json).toEqual({
        code: 135,
        error: 'installationId must be specified in this operation.',
      });
    });
  });
});

describe('cache bounds and purges (a fresh service each: the caches start empty)', () => {
  let t: TestService;
  beforeEach(async () => {
    t = await startService();
  });
  afterEach(async () => {
    await t?.close();
  });

  it('the role cache holds 10,000 users, then starts over; a session keeps the caller it built', async () => {
    const user = await createUser(t);
    const roles = observe(t, 'rolesOf');
    const sessions = observe(t, 'sessionByToken');
    await expectSignedIn(t, user.token, user.id);
    expect(roles.count(user.id)).toBe(1);

    const { callers } = t.service;
    const fake = (i: number) => `fake${String(i).padStart(6, '0')}`;
    // 9,999 more users: the cache is full (10,000), nothing is dropped yet.
    for (let i = 1; i <= 9_999; i++) await callers.forUser(fake(i));
    await callers.forUser(fake(1));
    expect(roles.count(fake(1))).toBe(1);
    await callers.forUser(user.id);
    expect(roles.count(user.id)).toBe(1);
    // One more: it starts over.
    await callers.forUser(fake(10_000));
    await callers.forUser(fake(1));
    expect(roles.count(fake(1))).toBe(2);

    // The session's caller was built with the roles and is still reused.
    await expectSignedIn(t, user.token, user.id);
    expect(roles.count(user.id)).toBe(1);
    expect(sessions.count(user.token)).toBe(1);
    await callers.forUser(user.id);
    expect(roles.count(user.id)).toBe(2);
  });

  it('the session cache holds 10,000 tokens, then starts over', async () => {
    const user = await createUser(t);
    const ctx = { caller: MASTER, source: 'account' as const, context: {} };
    const tokens: string[] = [];
    // Rows written in one transaction (fast); each is a real _Session row of the user.
    await t.service.data.core.store.transaction(async () => {
      for (let i = 0; i < 10_001; i++) {
        const token = newToken();
        tokens.push(token);
        await t.service.data.writes.create(ctx, '_Session', {
          user: pointer('_User', user.id),
          sessionToken: token,
          expiresAt: inAnHour(),
        });
      }
    });
    const sessions = observe(t, 'sessionByToken');
    const { callers } = t.service;
    const resolve = async (token: string) => {
      const caller = await callers.resolve({ master: false, sessionToken: token });
      expect(caller.user?.objectId).toBe(user.id);
    };
    const first = tokens[0]!;
    // 10,000 tokens: the cache is full, nothing is dropped yet.
    for (const token of tokens.slice(0, 10_000)) await resolve(token);
    await resolve(first);
    expect(sessions.count(first)).toBe(1);
    // One more: it starts over.
    await resolve(tokens[10_000]!);
    await resolve(first);
    expect(sessions.count(first)).toBe(2);
  });

  it('purging _Session refuses every token at once', async () => {
    const a = await createUser(t);
    const b = await createUser(t);
    await expectSignedIn(t, a.token, a.id);
    await expectSignedIn(t, b.token, b.id);
    const purge = await t.request('DELETE', '/purge/_Session', { as: 'master' });
    expect(purge.status).toBe(200);
    expect(purge.json).toEqual({});
    await expectRefused(t, a.token);
    await expectRefused(t, b.token);
  });
});

describe('the role cache follows every _Role write, purge included', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('purging _Role ends the grants of its roles at once', async () => {
    const user = await createUser(t);
    await createRole(t, 'Readers', { users: [user.id] });
    await createClass(t, 'Vault', { secret: { type: 'String' } });
    const row = await createRow(t, 'Vault', { secret: 's', ACL: { 'role:Readers': { read: true } } });
    expect((await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token })).status).toBe(200);
    const purge = await t.request('DELETE', '/purge/_Role', { as: 'master' });
    expect(purge.status).toBe(200);
    const after = await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token });
    expect(after.status).toBe(404);
    expect(after.json).toEqual({ code: 101, error: 'Object not found.' });
  });

  it('a role removed from a user ends its grant on the next request', async () => {
    const user = await createUser(t);
    const role = await createRole(t, 'Temps', { users: [user.id] });
    const row = await createRow(t, 'Vault', { secret: 't', ACL: { 'role:Temps': { read: true } } });
    expect((await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token })).status).toBe(200);
    await t.request('PUT', `/roles/${role}`, {
      as: 'master',
      body: {
        users: {
          __op: 'RemoveRelation',
          objects: [{ __type: 'Pointer', className: '_User', objectId: user.id }],
        },
      },
    });
    expect((await t.request('GET', `/classes/Vault/${row}`, { sessionToken: user.token })).status).toBe(404);
  });

  it('a logged-out token stops working at once (the session cache follows the delete)', async () => {
    const signUp = await t.request('POST', '/users', { body: { username: 'cached', password: 'pw' } });
    const token = signUp.json.sessionToken as string;
    expect((await t.request('GET', '/users/me', { sessionToken: token })).status).toBe(200);
    expect((await t.request('POST', '/logout', { sessionToken: token })).status).toBe(200);
    const me = await t.request('GET', '/users/me', { sessionToken: token });
    expect(me.status).toBe(400);
    expect(me.json).toEqual({ code: 209, error: 'Invalid session token' });
  });
});

async function login(t: TestService, username: string, password: string) {
  const res = await t.request('POST', '/login', { body: { username, password } });
  expect(res.status).toBe(200);
  return res.json as { sessionToken: string };
}

describe('a rollback drops the cached roles', () => {
  let t: TestService;
  beforeAll(async () => {
    // The fixture's beforeLogin trigger makes a login resolve the user's roles inside the batch.
    t = await startService({ cloud: CLOUD_MODULE });
  });
  afterAll(() => t.close());

  it('a failed transactional batch that added a user to a role grants nothing afterwards', async () => {
    const signup = await t.request('POST', '/users', { body: { username: 'grace', password: 'pw-grace' } });
    expect(signup.status).toBe(201);
    const user = {
      objectId: signup.json.objectId as string,
      token: signup.json.sessionToken as string,
      password: 'pw-grace',
    };
    const roleId = await createRole(t, 'Editors');
    await t.request('POST', '/schemas/Secret', {
      as: 'master',
      body: { fields: { title: { type: 'String' } } },
    });
    await t.request('POST', '/classes/Secret', {
      as: 'master',
      body: { title: 'for editors', ACL: { 'role:Editors': { read: true } } },
    });
    // The user's (empty) roles are resolved and cached before the batch.
    const before = await t.request('GET', '/classes/Secret', { sessionToken: user.token });
    expect(before.status).toBe(200);
    expect(before.json.results).toEqual([]);

    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        transaction: true,
        requests: [
          {
            method: 'PUT',
            path: `/roles/${roleId}`,
            body: { users: { __op: 'AddRelation', objects: [pointer('_User', user.objectId)] } },
          },
          // Resolves the user's roles inside the transaction (the login trigger sees its caller).
          { method: 'POST', path: '/login', body: { username: 'grace', password: user.password } },
          { method: 'POST', path: '/classes/Secret', body: { title: { __op: 'Increment', amount: 1 } } },
        ],
      },
    });
    expect(batch.status).toBe(400);

    const role = await t.request('GET', `/roles/${roleId}`, { as: 'master' });
    expect(role.status).toBe(200);
    const members = await t.request('GET', '/users', {
      as: 'master',
      query: { where: { $relatedTo: { object: pointer('_Role', roleId), key: 'users' } } },
    });
    expect(members.json.results).toEqual([]);

    for (const token of [user.token, (await login(t, 'grace', user.password)).sessionToken]) {
      const after = await t.request('GET', '/classes/Secret', { sessionToken: token });
      expect(after.status).toBe(200);
      expect(after.json.results).toEqual([]);
    }
  });
});
