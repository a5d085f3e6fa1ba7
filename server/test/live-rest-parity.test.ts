import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRole,
  createRow,
  createUser,
  PUBLIC_OPERATIONS,
  pointer,
  setClp,
  type TestUser,
} from './helpers/access-world.ts';
import { FakeClock } from './helpers/clock.ts';
import { flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * Realtime at the seams it shares with REST: every field a subscription names passes the
 * protected-field rule of a find, a session's expiry ends its subscriptions as a logout does, and a
 * beforeFind narrows a subscription as it narrows a find.
 */

const CLOUD = fileURLToPath(new URL('./fixtures/live-rest-parity-cloud.ts', import.meta.url));

const err = (code: number, error: string, requestId?: number | string) => ({
  op: 'error',
  code,
  error,
  reconnect: false,
  ...(requestId === undefined ? {} : { requestId }),
});

/** The text REST answers for a where on a hidden field; realtime answers it with code 4. */
const hidden = (field: string, className: string) =>
  `This user is not allowed to query ${field} on class ${className}.`;

const ENDED = 'The session of this subscription ended (logout or revoked session).';

const ids = (frames: any[]) => frames.map((f) => `${f.op}:${f.requestId}:${f.object?.objectId}`);

describe('realtime as REST: protected fields and beforeFind', () => {
  let t: TestService;
  let bob: TestUser;
  let keeper: TestUser;
  let carol: TestUser;
  let alice: TestUser;

  beforeAll(async () => {
    t = await startService({ cloud: CLOUD });
    [alice, bob, keeper, carol] = [
      await createUser(t),
      await createUser(t),
      await createUser(t),
      await createUser(t),
    ];
    await createRole(t, 'Keepers', { users: [keeper.id] });
    await createClass(
      t,
      'Vault',
      {
        title: { type: 'String' },
        secret: { type: 'String' },
        keeper: { type: 'Pointer', targetClass: '_User' },
      },
      { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['secret', 'keeper'], 'role:Keepers': [] } },
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  async function client(who: TestUser | 'anonymous' | 'master'): Promise<LiveClient> {
    const extra =
      who === 'master'
        ? { masterKey: KEYS.masterKey }
        : who === 'anonymous'
          ? {}
          : { sessionToken: who.token };
    const c = await LiveClient.connect(t, extra);
    await subscribeMarker(c);
    return c;
  }

  const put = async (className: string, id: string, body: Record<string, unknown>) => {
    const res = await t.request('PUT', `/classes/${className}/${id}`, { as: 'master', body });
    expect(res.status).toBe(200);
  };

  describe('every field a subscription names passes the protected-field rule', () => {
    it('watch on a protected field is refused (4): no event tells when it changes', async () => {
      const b = await client(bob);
      expect(await b.subscribe(1, { className: 'Vault', watch: ['secret'] })).toEqual(
        err(4, hidden('secret', 'Vault'), 1),
      );
      const id = await createRow(t, 'Vault', { title: 'a', secret: 's1', ACL: { '*': { read: true } } });
      await put('Vault', id, { title: 'b' });
      await put('Vault', id, { secret: 's2' });
      const [frames] = await flush(t, b);
      expect(frames).toEqual([]);
      b.close();
    });

    it('on _User, watch on email, password or authData by another user is refused (4)', async () => {
      const b = await client(bob);
      const query = (field: string) => ({
        className: '_User',
        where: { objectId: alice.id },
        watch: [field],
      });
      expect(await b.subscribe(1, query('email'))).toEqual(err(4, hidden('email', '_User'), 1));
      expect(await b.subscribe(2, query('password'))).toEqual(err(4, hidden('password', '_User'), 2));
      expect(await b.subscribe(3, query('authData'))).toEqual(err(4, hidden('authData', '_User'), 3));
      // A field the caller may read is still fine.
      expect((await b.subscribe(4, query('username'))).op).toBe('subscribed');
      b.close();
    });

    it('keys and include naming a hidden field are refused (4), dotted paths by their field', async () => {
      const b = await client(bob);
      expect(await b.subscribe(1, { className: 'Vault', keys: ['title', 'secret'] })).toEqual(
        err(4, hidden('secret', 'Vault'), 1),
      );
      expect(await b.subscribe(2, { className: 'Vault', keys: ['secret.inner'] })).toEqual(
        err(4, hidden('secret', 'Vault'), 2),
      );
      expect(await b.subscribe(3, { className: 'Vault', include: ['keeper'] })).toEqual(
        err(4, hidden('keeper', 'Vault'), 3),
      );
      expect(await b.subscribe(4, { className: 'Vault' }, { include: ['keeper.username'] })).toEqual(
        err(4, hidden('keeper', 'Vault'), 4),
      );
      b.close();
    });

    it('an update naming a hidden field is refused (4) and leaves the subscription as it was', async () => {
      const b = await client(bob);
      expect((await b.subscribe(1, { className: 'Vault', keys: ['title'] })).op).toBe('subscribed');
      b.send({ op: 'update', requestId: 1, query: { className: 'Vault', watch: ['secret'] } });
      expect(await b.take()).toEqual(err(4, hidden('secret', 'Vault'), 1));
      const id = await createRow(t, 'Vault', { title: 'kept', secret: 's', ACL: { '*': { read: true } } });
      const [frames] = await flush(t, b);
      expect(ids(frames)).toEqual([`create:1:${id}`]);
      expect(frames[0].object).toEqual({
        className: 'Vault',
        objectId: id,
        title: 'kept',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        ACL: { '*': { read: true } },
      });
      b.close();
    });

    it('who may read the field may name it: a role whose group hides nothing, and master', async () => {
      const [k, m] = await Promise.all([client(keeper), client('master')]);
      const query = { className: 'Vault', watch: ['secret'], keys: ['title', 'secret', 'keeper'] };
      for (const c of [k, m]) {
        expect((await c.subscribe(1, query, { include: ['keeper'] })).op).toBe('subscribed');
      }
      const id = await createRow(t, 'Vault', {
        title: 'x',
        secret: 's1',
        keeper: pointer('_User', keeper.id),
        ACL: { '*': { read: true } },
      });
      await put('Vault', id, { title: 'y' });
      await put('Vault', id, { secret: 's2' });
      const [fk, fm] = await flush(t, k, m);
      for (const frames of [fk, fm]) {
        // The create, then only the update that changed the watched field.
        expect(ids(frames)).toEqual([`create:1:${id}`, `update:1:${id}`]);
        expect(frames[1].object.secret).toBe('s2');
        expect(frames[1].object.keeper).toMatchObject({ __type: 'Object', objectId: keeper.id });
      }
      k.close();
      m.close();
    });

    it('a field protected after subscribing (CLP change) ends the subscription (4) before any event', async () => {
      await createClass(t, 'Shifting', { title: { type: 'String' }, code: { type: 'String' } });
      const id = await createRow(t, 'Shifting', { title: 'a', code: 'c1', ACL: { '*': { read: true } } });
      const b = await client(bob);
      expect((await b.subscribe(1, { className: 'Shifting', watch: ['code'] })).op).toBe('subscribed');
      expect((await b.subscribe(2, { className: 'Shifting', keys: ['code'] })).op).toBe('subscribed');
      expect((await b.subscribe(3, { className: 'Shifting', keys: ['title'] })).op).toBe('subscribed');
      await setClp(t, 'Shifting', { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['code'] } });
      // Ended at the schema change itself, without waiting for an event of the class.
      const ended = [await b.take(), await b.take()];
      expect(ended.sort((x, y) => x.requestId - y.requestId)).toEqual([
        err(4, hidden('code', 'Shifting'), 1),
        err(4, hidden('code', 'Shifting'), 2),
      ]);
      await put('Shifting', id, { code: 'c2' });
      const [frames] = await flush(t, b);
      // The subscription that names nothing hidden goes on, without the field.
      expect(ids(frames)).toEqual([`update:3:${id}`]);
      expect(frames[0].object.code).toBeUndefined();
      b.close();
    });

    it('a role change that hides a watched field ends the subscription (4) at the next event', async () => {
      const roleId = await createRole(t, 'Insiders', { users: [carol.id] });
      await createClass(
        t,
        'RoleVault',
        { secret: { type: 'String' } },
        { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['secret'], 'role:Insiders': [] } },
      );
      const id = await createRow(t, 'RoleVault', { secret: 's1', ACL: { '*': { read: true } } });
      const c = await client(carol);
      expect((await c.subscribe(1, { className: 'RoleVault', watch: ['secret'] })).op).toBe('subscribed');
      const removed = await t.request('PUT', `/roles/${roleId}`, {
        as: 'master',
        body: { users: { __op: 'RemoveRelation', objects: [pointer('_User', carol.id)] } },
      });
      expect(removed.status).toBe(200);
      await put('RoleVault', id, { secret: 's2' });
      const [frames] = await flush(t, c);
      expect(frames).toEqual([err(4, hidden('secret', 'RoleVault'), 1)]);
      c.close();
    });

    it('an included row is stripped of what its class hides, as REST strips it', async () => {
      await createClass(t, 'Post', {
        title: { type: 'String' },
        author: { type: 'Pointer', targetClass: '_User' },
      });
      const email = await t.request('PUT', `/users/${alice.id}`, {
        as: 'master',
        body: { email: 'alice@example.com' },
      });
      expect(email.status).toBe(200);
      const b = await client(bob);
      expect((await b.subscribe(1, { className: 'Post', include: ['author'] })).op).toBe('subscribed');
      const id = await createRow(t, 'Post', { title: 'p', author: pointer('_User', alice.id) });
      const [frames] = await flush(t, b);
      expect(ids(frames)).toEqual([`create:1:${id}`]);
      expect(frames[0].object.author).toMatchObject({
        __type: 'Object',
        objectId: alice.id,
        username: alice.username,
      });
      expect(frames[0].object.author.email).toBeUndefined();
      const rest = await t.request('GET', `/classes/Post/${id}`, {
        sessionToken: bob.token,
        query: { include: 'author' },
      });
      expect(rest.json.author.email).toBeUndefined();
      b.close();
    });
  });

  describe('beforeFind: a subscription keeps the narrowing its beforeFind answered at subscribe', () => {
    it('snapshot rows and events stay within the narrowing (create, enter, leave)', async () => {
      await createClass(t, 'Memo', { text: { type: 'String' }, visible: { type: 'Boolean' } });
      const shown = await createRow(t, 'Memo', { text: 'shown', visible: true });
      const hiddenRow = await createRow(t, 'Memo', { text: 'hidden', visible: false });
      const b = await client(bob);
      expect((await b.subscribe(1, { className: 'Memo', where: {} }, { snapshot: true })).op).toBe(
        'subscribed',
      );
      const snapshot = await b.take();
      expect(snapshot.op).toBe('snapshot');
      expect(snapshot.results.map((r: any) => r.objectId)).toEqual([shown]);
      const later = await createRow(t, 'Memo', { text: 'later', visible: true });
      await createRow(t, 'Memo', { text: 'never', visible: false });
      await put('Memo', later, { visible: false });
      await put('Memo', hiddenRow, { visible: true });
      const [frames] = await flush(t, b);
      expect(ids(frames)).toEqual([`create:1:${later}`, `leave:1:${later}`, `enter:1:${hiddenRow}`]);
      b.close();
    });

    it('a since replay uses the same narrowed where', async () => {
      const b = await client(bob);
      expect((await b.subscribe(1, { className: 'Memo' })).op).toBe('subscribed');
      const first = await createRow(t, 'Memo', { text: 'first', visible: true });
      const [seen] = await flush(t, b);
      expect(ids(seen)).toEqual([`create:1:${first}`]);
      const since = seen[0].eventId;
      await createRow(t, 'Memo', { text: 'out', visible: false });
      const inside = await createRow(t, 'Memo', { text: 'in', visible: true });
      const c = await client(bob);
      expect((await c.subscribe(1, { className: 'Memo' }, { since })).op).toBe('subscribed');
      const [replayed] = await flush(t, c);
      expect(ids(replayed)).toEqual([`create:1:${inside}`]);
      b.close();
      c.close();
    });

    it('a beforeFind that throws refuses the subscribe with the code and text REST answers (141)', async () => {
      await createClass(t, 'Locked', { text: { type: 'String' } });
      const rest = await t.request('GET', '/classes/Locked', { sessionToken: bob.token });
      expect(rest.status).toBe(400);
      expect(rest.json).toEqual({ code: 141, error: 'Locked is closed to this caller.' });
      const b = await client(bob);
      expect(await b.subscribe(1, { className: 'Locked' })).toEqual(
        err(141, 'Locked is closed to this caller.', 1),
      );
      await createRow(t, 'Locked', { text: 'x' });
      const [frames] = await flush(t, b);
      expect(frames).toEqual([]);
      b.close();
    });

    it('the query a beforeFind answers is checked as the caller own: a hidden field answers 4', async () => {
      await createClass(
        t,
        'Sneaky',
        { secret: { type: 'String' } },
        { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['secret'] } },
      );
      const [b, m] = await Promise.all([client(bob), client('master')]);
      expect(await b.subscribe(1, { className: 'Sneaky' })).toEqual(err(4, hidden('secret', 'Sneaky'), 1));
      expect((await m.subscribe(1, { className: 'Sneaky' })).op).toBe('subscribed');
      const id = await createRow(t, 'Sneaky', { secret: 'x' });
      await createRow(t, 'Sneaky', { secret: 'y' });
      const [fm] = await flush(t, m);
      expect(ids(fm)).toEqual([`create:1:${id}`]);
      b.close();
      m.close();
    });
  });
});

describe('realtime as REST: a subscription ends when its session expires', () => {
  let s: TestService;
  let clock: FakeClock;

  beforeAll(async () => {
    clock = new FakeClock(Date.now());
    s = await startService({ sessionLength: 3 }, { clock });
  });
  afterAll(async () => {
    await s?.close();
  });

  /** A signed-up user's token and the instant its session expires (as stored). */
  async function session(username: string): Promise<{ token: string; sessionId: string; expiresAt: number }> {
    const user = await s.request('POST', '/users', { body: { username, password: 'pw-123456' } });
    expect(user.status).toBe(201);
    const token = user.json.sessionToken as string;
    const row = await s.request('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { sessionToken: token } },
    });
    const found = row.json.results[0];
    return { token, sessionId: found.objectId, expiresAt: Date.parse(found.expiresAt.iso) };
  }

  const me = (token: string) => s.request('GET', '/users/me', { sessionToken: token });

  async function anonymousClient(): Promise<LiveClient> {
    const c = await LiveClient.connect(s, {});
    await subscribeMarker(c);
    return c;
  }

  it('after expiry the next write ends the subscription with 209 instead of delivering; REST answers 209 then', async () => {
    const { token, expiresAt } = await session('expires-by-event');
    clock.set(expiresAt - 1);
    const c = await anonymousClient();
    expect((await c.subscribe(1, { className: 'Ticker' }, { sessionToken: token })).op).toBe('subscribed');
    const before = await createRow(s, 'Ticker', { n: 1 });
    expect(ids((await flush(s, c))[0])).toEqual([`create:1:${before}`]);
    expect((await me(token)).status).toBe(200);
    // The expiry instant, without firing the timers: the event alone must end the subscription.
    clock.current = expiresAt;
    await createRow(s, 'Ticker', { n: 2 });
    const [frames] = await flush(s, c);
    expect(frames).toEqual([err(209, ENDED, 1)]);
    const after = await me(token);
    expect(after.status).toBe(400);
    expect(after.json).toEqual({ code: 209, error: 'Invalid session token' });
    c.close();
  });

  it('with no writes at all, a timer at the expiry ends the subscription with 209', async () => {
    const { token, expiresAt } = await session('expires-by-timer');
    clock.set(expiresAt - 1);
    const c = await anonymousClient();
    expect((await c.subscribe(1, { className: 'Ticker' }, { sessionToken: token })).op).toBe('subscribed');
    clock.set(expiresAt);
    expect(await c.take()).toEqual(err(209, ENDED, 1));
    expect((await me(token)).json).toEqual({ code: 209, error: 'Invalid session token' });
    await createRow(s, 'Ticker', { n: 3 });
    const [frames] = await flush(s, c);
    expect(frames).toEqual([]);
    c.close();
  });

  it('a connection made with the token: its subscriptions end with 209 at expiry, a new subscribe answers 209', async () => {
    const { token, expiresAt } = await session('expires-on-connect');
    clock.set(expiresAt - 1);
    const c = await LiveClient.connect(s, { sessionToken: token });
    await subscribeMarker(c);
    expect((await c.subscribe(1, { className: 'Ticker' })).op).toBe('subscribed');
    clock.set(expiresAt);
    const ended = [await c.take(), await c.take()];
    expect(ended.sort((x, y) => String(x.requestId).localeCompare(String(y.requestId)))).toEqual([
      err(209, ENDED, 1),
      err(209, ENDED, 'marker'),
    ]);
    expect(await c.subscribe(2, { className: 'Ticker' })).toEqual(err(209, 'Invalid session token', 2));
    c.close();
  });

  it('a session whose expiry is moved later keeps its subscription until the new expiry', async () => {
    const { token, sessionId, expiresAt } = await session('extended');
    clock.set(expiresAt - 1);
    const c = await anonymousClient();
    expect((await c.subscribe(1, { className: 'Ticker' }, { sessionToken: token })).op).toBe('subscribed');
    const extended = expiresAt + 60_000;
    const moved = await s.request('PUT', `/classes/_Session/${sessionId}`, {
      as: 'master',
      body: { expiresAt: { __type: 'Date', iso: new Date(extended).toISOString() } },
    });
    expect(moved.status).toBe(200);
    clock.set(expiresAt + 1);
    const id = await createRow(s, 'Ticker', { n: 4 });
    expect(ids((await flush(s, c))[0])).toEqual([`create:1:${id}`]);
    expect((await me(token)).status).toBe(200);
    clock.set(extended);
    expect(await c.take()).toEqual(err(209, ENDED, 1));
    c.close();
  });
});
