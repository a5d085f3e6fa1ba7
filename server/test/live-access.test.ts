import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRole,
  createRow,
  createUser,
  PUBLIC_OPERATIONS,
  pointer,
  type TestUser,
} from './helpers/access-world.ts';
import { flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

let t: TestService;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t);
  bob = await createUser(t);
  carol = await createUser(t);
  await createRole(t, 'Editors', { users: [alice.id] });
});
afterAll(async () => {
  await t?.close();
});

const err = (code: number, error: string, requestId?: number | string) => ({
  op: 'error',
  code,
  error,
  reconnect: false,
  ...(requestId === undefined ? {} : { requestId }),
});

/** A connected client with the marker subscription, as `who` (a user, anonymous, or master). */
async function client(who: TestUser | 'anonymous' | 'master'): Promise<LiveClient> {
  const extra =
    who === 'master' ? { masterKey: KEYS.masterKey } : who === 'anonymous' ? {} : { sessionToken: who.token };
  const c = await LiveClient.connect(t, extra);
  await subscribeMarker(c);
  return c;
}

const ids = (frames: any[]) => frames.map((f) => `${f.op}:${f.object?.objectId}`);

describe('realtime access: ACL', () => {
  it('a private row reaches its owner and master, never another user or anonymous', async () => {
    await createClass(t, 'Note', { text: { type: 'String' } });
    const [a, b, anon, m] = await Promise.all([
      client(alice),
      client(bob),
      client('anonymous'),
      client('master'),
    ]);
    for (const c of [a, b, anon, m])
      expect((await c.subscribe(1, { className: 'Note' })).op).toBe('subscribed');
    const id = await createRow(t, 'Note', { text: 'mine', ACL: { [alice.id]: { read: true, write: true } } });
    const pub = await createRow(t, 'Note', { text: 'all', ACL: { '*': { read: true } } });
    const [fa, fb, fanon, fm] = await flush(t, a, b, anon, m);
    expect(ids(fa)).toEqual([`create:${id}`, `create:${pub}`]);
    expect(ids(fb)).toEqual([`create:${pub}`]);
    expect(ids(fanon)).toEqual([`create:${pub}`]);
    expect(ids(fm)).toEqual([`create:${id}`, `create:${pub}`]);
    for (const c of [a, b, anon, m]) c.close();
  });

  it('a configured master key alone does not elevate: a connection without masterKey is not master', async () => {
    const c = await LiveClient.connect(t, {});
    await subscribeMarker(c);
    await c.subscribe(1, { className: 'Note' });
    await createRow(t, 'Note', { text: 'hidden', ACL: {} });
    const [frames] = await flush(t, c);
    expect(frames).toEqual([]);
    c.close();
  });

  it('an ACL change gives enter to who gains the row and leave (without its new state) to who loses it', async () => {
    const [a, b] = await Promise.all([client(alice), client(bob)]);
    await a.subscribe(1, { className: 'Note' });
    await b.subscribe(1, { className: 'Note' });
    const id = await createRow(t, 'Note', { text: 'v1', ACL: { [alice.id]: { read: true } } });
    await t.request('PUT', `/classes/Note/${id}`, {
      as: 'master',
      body: { text: 'v2', ACL: { [bob.id]: { read: true } } },
    });
    const [fa, fb] = await flush(t, a, b);
    expect(fa.map((f) => f.op)).toEqual(['create', 'leave']);
    expect(fa[1].object).toEqual({ className: 'Note', objectId: id });
    expect(fa[1].original).toMatchObject({ objectId: id, text: 'v1' });
    expect(fb.map((f) => f.op)).toEqual(['enter']);
    expect(fb[0].object).toMatchObject({ objectId: id, text: 'v2' });
    // Bob could not read the row before: no original.
    expect(fb[0].original).toBeUndefined();
    a.close();
    b.close();
  });

  it('a delete reaches only those who could read the row', async () => {
    const [a, b] = await Promise.all([client(alice), client(bob)]);
    await a.subscribe(1, { className: 'Note' });
    await b.subscribe(1, { className: 'Note' });
    const id = await createRow(t, 'Note', { text: 'x', ACL: { [alice.id]: { read: true } } });
    await t.request('DELETE', `/classes/Note/${id}`, { as: 'master' });
    const [fa, fb] = await flush(t, a, b);
    expect(ids(fa)).toEqual([`create:${id}`, `delete:${id}`]);
    expect(fb).toEqual([]);
    a.close();
    b.close();
  });
});

describe('realtime access: roles', () => {
  it('a row readable by a role reaches its members; a grant and a revocation apply to the next event', async () => {
    const roleId = await createRole(t, 'Readers', {});
    const [b, c] = await Promise.all([client(bob), client(carol)]);
    await b.subscribe(1, { className: 'Note' });
    await c.subscribe(1, { className: 'Note' });
    const id = await createRow(t, 'Note', { text: 'r1', ACL: { 'role:Readers': { read: true } } });
    let [fb, fc] = await flush(t, b, c);
    expect(fb).toEqual([]);
    expect(fc).toEqual([]);
    await t.request('PUT', `/roles/${roleId}`, {
      as: 'master',
      body: { users: { __op: 'AddRelation', objects: [pointer('_User', bob.id)] } },
    });
    await t.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { text: 'r2' } });
    [fb, fc] = await flush(t, b, c);
    expect(fb.map((f) => [f.op, f.object.text, f.original?.text])).toEqual([['update', 'r2', 'r1']]);
    expect(fc).toEqual([]);
    await t.request('PUT', `/roles/${roleId}`, {
      as: 'master',
      body: { users: { __op: 'RemoveRelation', objects: [pointer('_User', bob.id)] } },
    });
    await t.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { text: 'r3' } });
    [fb, fc] = await flush(t, b, c);
    expect(fb).toEqual([]);
    expect(fc).toEqual([]);
    b.close();
    c.close();
  });

  it('a role held through another role grants too', async () => {
    await createRole(t, 'Outer', { roles: [] });
    const inner = await createRole(t, 'Inner', { users: [carol.id] });
    await createRole(t, 'Top', { roles: [inner] });
    const c = await client(carol);
    await c.subscribe(1, { className: 'Note' });
    const id = await createRow(t, 'Note', { text: 'nested', ACL: { 'role:Top': { read: true } } });
    const [fc] = await flush(t, c);
    expect(ids(fc)).toEqual([`create:${id}`]);
    c.close();
  });
});

describe('realtime access: CLP', () => {
  it('CLP find for a role: non-members are refused at subscribe (119), members receive', async () => {
    await createClass(
      t,
      'Staff',
      { x: { type: 'Number' } },
      { find: { 'role:Editors': true }, get: { 'role:Editors': true } },
    );
    const b = await client(bob);
    expect(await b.subscribe(1, { className: 'Staff' })).toEqual(
      err(119, 'Permission denied for action find on class Staff.', 1),
    );
    const a = await client(alice);
    expect((await a.subscribe(1, { className: 'Staff' })).op).toBe('subscribed');
    const id = await createRow(t, 'Staff', { x: 1 });
    const [fa] = await flush(t, a);
    expect(ids(fa)).toEqual([`create:${id}`]);
    a.close();
    b.close();
  });

  it('requiresAuthentication: anonymous refused with its text, a user receives', async () => {
    await createClass(
      t,
      'Members',
      { x: { type: 'Number' } },
      {
        find: { requiresAuthentication: true },
        get: { requiresAuthentication: true },
      },
    );
    const anon = await client('anonymous');
    expect(await anon.subscribe(1, { className: 'Members' })).toEqual(
      err(119, 'Permission denied, user needs to be authenticated.', 1),
    );
    const b = await client(bob);
    expect((await b.subscribe(1, { className: 'Members' })).op).toBe('subscribed');
    const id = await createRow(t, 'Members', { x: 1 });
    const [fb] = await flush(t, b);
    expect(ids(fb)).toEqual([`create:${id}`]);
    anon.close();
    b.close();
  });

  it('pointer permissions (readUserFields): a user receives only rows that point at them', async () => {
    await createClass(
      t,
      'Owned',
      { owner: { type: 'Pointer', targetClass: '_User' }, x: { type: 'Number' } },
      {
        find: {},
        get: {},
        readUserFields: ['owner'],
      },
    );
    const [a, b] = await Promise.all([client(alice), client(bob)]);
    await a.subscribe(1, { className: 'Owned' });
    await b.subscribe(1, { className: 'Owned' });
    const mine = await createRow(t, 'Owned', { owner: pointer('_User', alice.id), x: 1 });
    const theirs = await createRow(t, 'Owned', { owner: pointer('_User', bob.id), x: 2 });
    const [fa, fb] = await flush(t, a, b);
    expect(ids(fa)).toEqual([`create:${mine}`]);
    expect(ids(fb)).toEqual([`create:${theirs}`]);
    a.close();
    b.close();
  });

  it('a role granted CLP find after subscribe failed: a later grant is applied on the next event of a subscription', async () => {
    const roleId = await createRole(t, 'Auditors', {});
    await createClass(
      t,
      'Audit',
      { x: { type: 'Number' } },
      {
        find: { 'role:Auditors': true, [carol.id]: true },
        get: { 'role:Auditors': true, [carol.id]: true },
      },
    );
    // Carol may subscribe through her own entry; Bob joins later through the role.
    const c = await client(carol);
    await c.subscribe(1, { className: 'Audit' });
    const first = await createRow(t, 'Audit', { x: 1 });
    await t.request('PUT', `/roles/${roleId}`, {
      as: 'master',
      body: { users: { __op: 'AddRelation', objects: [pointer('_User', bob.id)] } },
    });
    const b = await client(bob);
    expect((await b.subscribe(1, { className: 'Audit' })).op).toBe('subscribed');
    await t.request('PUT', `/roles/${roleId}`, {
      as: 'master',
      body: { users: { __op: 'RemoveRelation', objects: [pointer('_User', bob.id)] } },
    });
    const second = await createRow(t, 'Audit', { x: 2 });
    const [fc, fb] = await flush(t, c, b);
    expect(ids(fc)).toEqual([`create:${first}`, `create:${second}`]);
    // The revocation landed before the event: CLP find no longer allows Bob, so nothing is delivered.
    expect(fb).toEqual([]);
    c.close();
    b.close();
  });
});

describe('realtime access: protectedFields', () => {
  it('protected fields are stripped from object and original; a where on one is refused (4)', async () => {
    await createClass(
      t,
      'Profile',
      { name: { type: 'String' }, phone: { type: 'String' } },
      {
        ...PUBLIC_OPERATIONS,
        protectedFields: { '*': ['phone'], 'role:Editors': [] },
      },
    );
    const [a, b, m] = await Promise.all([client(alice), client(bob), client('master')]);
    expect(await b.subscribe(1, { className: 'Profile', where: { phone: '123' } })).toEqual(
      err(4, 'This user is not allowed to query phone on class Profile.', 1),
    );
    await a.subscribe(1, { className: 'Profile' });
    await b.subscribe(2, { className: 'Profile' });
    await m.subscribe(1, { className: 'Profile', where: { phone: '123' } });
    const id = await createRow(t, 'Profile', { name: 'p', phone: '123' });
    await t.request('PUT', `/classes/Profile/${id}`, { as: 'master', body: { name: 'q' } });
    const [fa, fb, fm] = await flush(t, a, b, m);
    expect(fb.map((f) => f.op)).toEqual(['create', 'update']);
    for (const f of fb) {
      expect(f.object.phone).toBeUndefined();
      if (f.original) expect(f.original.phone).toBeUndefined();
    }
    expect(fb[1].original).toMatchObject({ name: 'p' });
    // Editors see the field (their group hides nothing), and so does master.
    expect(fa.map((f) => f.object.phone)).toEqual(['123', '123']);
    expect(fm.map((f) => f.object.phone)).toEqual(['123', '123']);
    a.close();
    b.close();
    m.close();
  });
});

describe('realtime access: sessions', () => {
  it('logout ends the subscriptions that used the token with 209; others go on', async () => {
    const user = await t.request('POST', '/users', { body: { username: 'leaver', password: 'pw-123456' } });
    const token = user.json.sessionToken;
    const c = await LiveClient.connect(t, { sessionToken: token });
    await subscribeMarker(c);
    await c.subscribe(1, { className: 'Note' });
    const other = await LiveClient.connect(t, {});
    await subscribeMarker(other);
    await other.subscribe(1, { className: 'Note' }, { sessionToken: bob.token });
    await t.request('POST', '/logout', { sessionToken: token });
    // Both subscriptions of the connection used its token (the marker's too).
    const ended = [await c.take(), await c.take()];
    const text = 'The session of this subscription ended (logout or revoked session).';
    expect(ended.sort((x, y) => String(x.requestId).localeCompare(String(y.requestId)))).toEqual([
      err(209, text, 1),
      err(209, text, 'marker'),
    ]);
    await createRow(t, 'Note', { text: 'after logout' });
    const [fo] = await flush(t, other);
    expect(fo.map((f) => f.op)).toEqual(['create']);
    expect(c.frames).toEqual([]);
    c.close();
    other.close();
  });

  it('a per-subscription token: deleting that session (master) ends only that subscription with 209', async () => {
    const user = await t.request('POST', '/users', { body: { username: 'revoked', password: 'pw-123456' } });
    const token = user.json.sessionToken as string;
    const session = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { sessionToken: token } },
    });
    const sessionId = session.json.results[0].objectId;
    const c = await LiveClient.connect(t, {});
    await subscribeMarker(c);
    await c.subscribe(1, { className: 'Note' }, { sessionToken: token });
    await c.subscribe(2, { className: 'Note' });
    await t.request('DELETE', `/classes/_Session/${sessionId}`, { as: 'master' });
    expect(await c.take()).toEqual(
      err(209, 'The session of this subscription ended (logout or revoked session).', 1),
    );
    await createRow(t, 'Note', { text: 'still anonymous' });
    const [frames] = await flush(t, c);
    expect(frames.map((f) => [f.op, f.requestId])).toEqual([['create', 2]]);
    c.close();
  });

  it('a session expired by master: the next event ends the subscription with 209 instead of delivering', async () => {
    const user = await t.request('POST', '/users', { body: { username: 'expiring', password: 'pw-123456' } });
    const token = user.json.sessionToken as string;
    const session = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { sessionToken: token } },
    });
    const c = await LiveClient.connect(t, {});
    await subscribeMarker(c);
    await c.subscribe(1, { className: 'Note' }, { sessionToken: token });
    const expired = await t.request('PUT', `/classes/_Session/${session.json.results[0].objectId}`, {
      as: 'master',
      body: { expiresAt: { __type: 'Date', iso: '2020-01-01T00:00:00.000Z' } },
    });
    expect(expired.status).toBe(200);
    await createRow(t, 'Note', { text: 'after expiry' });
    const [frames] = await flush(t, c);
    expect(frames).toEqual([
      err(209, 'The session of this subscription ended (logout or revoked session).', 1),
    ]);
    c.close();
  });

  it('subscribing with an invalid per-subscription token: 209', async () => {
    const c = await LiveClient.connect(t, {});
    expect(await c.subscribe(1, { className: 'Note' }, { sessionToken: 'r:bogus' })).toEqual(
      err(209, 'Invalid session token', 1),
    );
    c.close();
  });
});
