import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRole,
  createRow,
  createUser,
  pointer,
  type TestUser,
} from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/** Security review probes, part 2: roles, pointer permissions, requiresAuthentication, sessions. */
let t: TestService;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser; // in Staff, which is in Managers
const ids: Record<string, string> = {};

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t, 'alice2');
  bob = await createUser(t, 'bob2');
  carol = await createUser(t, 'carol2');
  const staff = await createRole(t, 'Staff', { users: [carol.id] });
  ids.managers = await createRole(t, 'Managers', { roles: [staff] });
  const hidden = await t.request('POST', '/roles', {
    as: 'master',
    body: { name: 'Hidden', ACL: {}, users: { __op: 'AddRelation', objects: [pointer('_User', bob.id)] } },
  });
  ids.hiddenRole = hidden.json.objectId;
  await createClass(
    t,
    'Note',
    { body: { type: 'String' }, author: { type: 'Pointer', targetClass: '_User' } },
    {
      find: { requiresAuthentication: true },
      get: { requiresAuthentication: true },
      count: { requiresAuthentication: true },
      create: { '*': true },
      update: { '*': true },
      delete: { '*': true },
      addField: {},
    },
  );
  await createClass(
    t,
    'Mine',
    { body: { type: 'String' }, author: { type: 'Pointer', targetClass: '_User' } },
    {
      find: {},
      get: {},
      count: {},
      create: { '*': true },
      update: {},
      delete: {},
      addField: {},
      readUserFields: ['author'],
      writeUserFields: ['author'],
    },
  );
  await createClass(t, 'Link', { to: { type: 'Pointer', targetClass: 'Mine' }, many: { type: 'Array' } });
  ids.managersNote = await createRow(t, 'Note', {
    body: 'for-managers',
    ACL: { 'role:Managers': { read: true, write: true } },
  });
  ids.publicNote = await createRow(t, 'Note', { body: 'public-note', ACL: { '*': { read: true } } });
  ids.aliceMine = await createRow(t, 'Mine', {
    body: 'alice-mine',
    author: pointer('_User', alice.id),
    ACL: { '*': { read: true, write: true } },
  });
  ids.link = await createRow(t, 'Link', {
    to: pointer('Mine', ids.aliceMine),
    many: [pointer('Mine', ids.aliceMine)],
  });
});

afterAll(async () => {
  await t?.close();
});

describe('security review 2: roles and inherited roles', () => {
  it('a role grant reaches users of a child role, and nobody else', async () => {
    const c = await t.request('GET', `/classes/Note/${ids.managersNote}`, { sessionToken: carol.token });
    expect(c.status, c.text).toBe(200);
    const a = await t.request('GET', `/classes/Note/${ids.managersNote}`, { sessionToken: alice.token });
    expect(a.json.code).toBe(101);
    const cnt = await t.request('GET', '/classes/Note', {
      sessionToken: alice.token,
      query: { count: 1, limit: 0 },
    });
    expect(cnt.json.count).toBe(1);
    const put = await t.request('PUT', `/classes/Note/${ids.managersNote}`, {
      sessionToken: alice.token,
      body: { body: 'x' },
    });
    expect(put.json.code).toBe(101);
  });

  it('$relatedTo on a role the caller cannot read matches nothing', async () => {
    const r = await t.request('GET', '/users', {
      sessionToken: alice.token,
      query: { where: { $relatedTo: { object: pointer('_Role', ids.hiddenRole), key: 'users' } } },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.results).toEqual([]);
    const roles = await t.request('GET', '/roles', { sessionToken: alice.token });
    expect(r.text + roles.text).not.toContain('Hidden');
  });

  it('a non-master caller cannot pick an objectId or write system columns', async () => {
    for (const [body, error] of [
      [{ objectId: 'chosen1234' }, 'objectId is an invalid field name.'],
      [{ createdAt: '2000-01-01T00:00:00.000Z' }, 'createdAt is an invalid field name.'],
      [
        { _rperm: ['*'] },
        'Invalid field name: _rperm (field names start with a letter and hold only letters, digits and _).',
      ],
    ] as const) {
      const r = await t.request('POST', '/classes/Note', { sessionToken: alice.token, body });
      expect(r.status, `${JSON.stringify(body)} ${r.text}`).toBe(400);
      expect(r.json).toEqual({ code: 105, error });
    }
  });
});

describe('security review 2: requiresAuthentication and pointer permissions', () => {
  it('requiresAuthentication answers 101 before ACL on find, get, count, subqueries (app keys only)', async () => {
    for (const q of [{}, { count: 1, limit: 0 }]) {
      const r = await t.request('GET', '/classes/Note', { query: q });
      expect(r.json).toEqual({ code: 101, error: 'Permission denied, user needs to be authenticated.' });
    }
    const g = await t.request('GET', `/classes/Note/${ids.publicNote}`, {});
    expect(g.json.code).toBe(101);
    const sub = await t.request('GET', '/classes/Link', {
      query: { where: { to: { $inQuery: { className: 'Note', where: {} } } } },
    });
    expect(sub.json.code).toBe(101);
  });

  it('readUserFields limit find, get, include and subqueries to the pointed-at user', async () => {
    const bobFind = await t.request('GET', '/classes/Mine', { sessionToken: bob.token });
    expect(bobFind.json.results).toEqual([]);
    const bobGet = await t.request('GET', `/classes/Mine/${ids.aliceMine}`, { sessionToken: bob.token });
    expect(bobGet.json.code).toBe(101);
    const inc = await t.request('GET', `/classes/Link/${ids.link}`, {
      sessionToken: bob.token,
      query: { include: 'to,many' },
    });
    expect(inc.status).toBe(200);
    expect(inc.text).not.toContain('alice-mine');
    const sub = await t.request('GET', '/classes/Link', {
      sessionToken: bob.token,
      query: { where: { to: { $inQuery: { className: 'Mine', where: {} } } } },
    });
    expect(sub.json.results).toEqual([]);
    const anon = await t.request('GET', '/classes/Link', {
      query: { where: { to: { $inQuery: { className: 'Mine', where: {} } } } },
    });
    expect(anon.status).toBe(400);
    expect(anon.json).toEqual({ code: 119, error: 'Permission denied for action find on class Mine.' });
    const upd = await t.request('PUT', `/classes/Mine/${ids.aliceMine}`, {
      sessionToken: bob.token,
      body: { body: 'changed' },
    });
    expect(upd.json.code).toBe(101);
    const del = await t.request('DELETE', `/classes/Mine/${ids.aliceMine}`, { sessionToken: bob.token });
    expect(del.json.code).toBe(101);
    const aliceGet = await t.request('GET', `/classes/Mine/${ids.aliceMine}`, { sessionToken: alice.token });
    expect(aliceGet.json.body).toBe('alice-mine');
  });
});

describe('security review 2: sessions are scoped to their user', () => {
  it('a where, $or or count cannot widen the session scope', async () => {
    for (const q of [
      { where: { user: pointer('_User', bob.id) } },
      { where: { $or: [{ user: pointer('_User', bob.id) }, { user: pointer('_User', alice.id) }] } },
      { count: 1 },
    ]) {
      const r = await t.request('GET', '/sessions', { sessionToken: alice.token, query: q });
      expect(r.status, r.text).toBe(200);
      expect(r.text).not.toContain(bob.token);
      for (const s of r.json.results) expect(s.user.objectId).toBe(alice.id);
      if ('count' in q) expect(r.json.count).toBe(1);
    }
    const anon = await t.request('GET', '/sessions', {});
    expect(anon.status, anon.text).toBe(400);
    expect(anon.json).toEqual({ code: 209, error: 'Session token required: send X-Backend-Session-Token.' });
    expect(anon.text).not.toContain('r:');
  });
});
