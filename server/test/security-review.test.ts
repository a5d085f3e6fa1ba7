import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRole,
  createRow,
  createUser,
  pointer,
  setClp,
  type TestUser,
} from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Security review probes: an attacker with app keys only, with a session, and in a role, against
 * every read and write path. Each test names the leak it guards against.
 */
let t: TestService;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser; // in role Staff
let aliceSessionId: string;
let bobSessionId: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t, 'alice');
  bob = await createUser(t, 'bob');
  carol = await createUser(t, 'carol');
  await createRole(t, 'Staff', { users: [carol.id] });
  // email on each user (protected under "*").
  for (const u of [alice, bob, carol]) {
    const r = await t.request('PUT', `/users/${u.id}`, {
      as: 'master',
      body: { email: `${u.username}@x.io` },
    });
    expect(r.status, r.text).toBe(200);
  }
  const sessions = await t.request('GET', '/sessions', { as: 'master', query: { limit: 100 } });
  for (const s of sessions.json.results) {
    if (s.user.objectId === alice.id) aliceSessionId = s.objectId;
    if (s.user.objectId === bob.id) bobSessionId = s.objectId;
  }
  await createClass(
    t,
    'Doc',
    {
      title: { type: 'String' },
      secret: { type: 'String' },
      score: { type: 'Number' },
      tags: { type: 'Array' },
      owner: { type: 'Pointer', targetClass: '_User' },
      ref: { type: 'Pointer', targetClass: 'Doc' },
      refs: { type: 'Array' },
      meta: { type: 'Object' },
      rel: { type: 'Relation', targetClass: 'Doc' },
    },
    {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: { '*': true },
      update: { '*': true },
      delete: { '*': true },
      addField: {},
      protectedFields: { '*': ['secret'], 'role:Staff': [] },
    },
  );
  ids.public = await createRow(t, 'Doc', {
    title: 'public',
    secret: 's-public',
    score: 1,
    ACL: { '*': { read: true, write: true } },
  });
  ids.alicePrivate = await createRow(t, 'Doc', {
    title: 'alice-only',
    secret: 's-alice',
    score: 42,
    tags: ['hidden-tag'],
    owner: pointer('_User', alice.id),
    ACL: { [alice.id]: { read: true, write: true } },
  });
  ids.writeOnly = await createRow(t, 'Doc', {
    title: 'write-only',
    secret: 's-writeonly',
    score: 777,
    tags: ['wo-tag-1', 'wo-tag-2'],
    meta: { n: 5 },
    ACL: { '*': { write: true } },
  });
  ids.masterOnly = await createRow(t, 'Doc', { title: 'master-only', score: 9, ACL: {} });
  ids.pointing = await createRow(t, 'Doc', {
    title: 'pointing',
    ref: pointer('Doc', ids.alicePrivate),
    refs: [pointer('Doc', ids.alicePrivate), pointer('_User', bob.id), pointer('_Session', bobSessionId)],
    owner: pointer('_User', bob.id),
    ACL: { '*': { read: true } },
  });
});

afterAll(async () => {
  await t?.close();
});

const text = (r: { text: string }) => r.text;

describe('security review: hidden _User columns and secrets', () => {
  it('hidden columns are never queryable, selectable or sortable', async () => {
    for (const col of [
      '_hashed_password',
      '_mfa',
      '_perishable_token',
      '_auth_anonymous_id',
      '_rperm',
      '_wperm',
    ]) {
      const where = await t.request('GET', '/users', {
        sessionToken: alice.token,
        query: { where: { [col]: { $exists: true } } },
      });
      expect(where.status, `${col} ${where.text}`).toBe(400);
      expect(where.json).toEqual({
        code: 105,
        error: `Invalid where: invalid key name "${col}" (field names start with a letter and hold only letters, digits and _).`,
      });
      for (const param of ['keys', 'order', 'excludeKeys', 'include']) {
        const r = await t.request('GET', '/classes/_User', {
          sessionToken: alice.token,
          query: { [param]: col },
        });
        expect(r.status, `${param}=${col}: ${r.text}`).toBe(400);
        expect(r.json).toEqual({ code: 105, error: `Invalid ${param}: "${col}".` });
      }
    }
  });

  it('password, authData and email cannot be queried, selected by $select or sorted on', async () => {
    for (const field of ['password', 'authData', 'email', 'authData.anonymous.id']) {
      const refused = {
        code: 119,
        error: `This user is not allowed to query ${field.split('.')[0]} on class _User.`,
      };
      const where = await t.request('GET', '/users', {
        sessionToken: alice.token,
        query: { where: { [field]: { $exists: true } } },
      });
      expect(where.status, where.text).toBe(400);
      expect(where.json).toEqual(refused);
      const order = await t.request('GET', '/users', { sessionToken: alice.token, query: { order: field } });
      expect(order.status, order.text).toBe(400);
      expect(order.json).toEqual(refused);
      const select = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: {
          where: { title: { $select: { query: { className: '_User', where: {} }, key: field } } },
        },
      });
      expect(select.status, select.text).toBe(400);
      expect(select.json).toEqual(refused);
      const inQuery = await t.request('GET', '/classes/Doc', {
        sessionToken: carol.token,
        query: {
          where: {
            owner: { $inQuery: { className: '_User', where: { [field.split('.')[0]!]: { $regex: '^a' } } } },
          },
          count: 1,
          limit: 0,
        },
      });
      expect(inQuery.status, inQuery.text).toBe(400);
      expect(inQuery.json).toEqual(refused);
    }
  });

  it('email is stripped from find, get, include and keys (even for the owner)', async () => {
    const find = await t.request('GET', '/users', {
      sessionToken: alice.token,
      query: { keys: 'email,username' },
    });
    expect(find.status).toBe(200);
    expect(text(find)).not.toContain('@x.io');
    const get = await t.request('GET', `/users/${alice.id}`, { sessionToken: alice.token });
    expect(text(get)).not.toContain('@x.io');
    const inc = await t.request('GET', '/classes/Doc', {
      sessionToken: carol.token,
      query: { include: 'owner,refs,*', keys: 'owner.email,refs,owner' },
    });
    expect(inc.status, inc.text).toBe(200);
    expect(text(inc)).not.toContain('@x.io');
    expect(text(inc)).not.toContain('authData');
  });

  it('no answer carries another user session token', async () => {
    const paths = [
      ['/classes/Doc', { include: 'refs', where: { objectId: ids.pointing } }],
      ['/sessions', {}],
      ['/classes/_Session', {}],
      [`/sessions/${bobSessionId}`, {}],
    ] as const;
    for (const [p, q] of paths) {
      const r = await t.request('GET', p, { sessionToken: alice.token, query: q });
      expect(text(r)).not.toContain(bob.token);
    }
    // The escaped spelling is the same route as /classes/_Session (one normal form of a path).
    const viaEncoded = await t.request('GET', '/classes/%5FSession', { sessionToken: alice.token });
    const plain = await t.request('GET', '/classes/_Session', { sessionToken: alice.token });
    expect(viaEncoded.status).toBe(plain.status);
    expect(viaEncoded.json).toEqual(plain.json);
    expect(text(viaEncoded)).not.toContain(bob.token);
    const sub = await t.request('GET', '/classes/Doc', {
      sessionToken: alice.token,
      query: {
        where: { title: { $select: { query: { className: '_Session', where: {} }, key: 'sessionToken' } } },
      },
    });
    expect(sub.status).toBe(400);
    expect(sub.json).toEqual({ code: 119, error: 'Permission denied for action find on class _Session.' });
  });

  it('a user cannot read, change or delete another user session', async () => {
    const get = await t.request('GET', `/sessions/${bobSessionId}`, { sessionToken: alice.token });
    expect(get.json.code).toBe(101);
    const missing = await t.request('GET', '/sessions/doesnotexist', { sessionToken: alice.token });
    expect(missing.json).toEqual(get.json);
    const put = await t.request('PUT', `/sessions/${bobSessionId}`, {
      sessionToken: alice.token,
      body: { user: pointer('_User', alice.id) },
    });
    expect(put.status).toBe(403);
    expect(put.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    // The escaped spelling is the session route: master only, as /sessions/<id>.
    const putEnc = await t.request('PUT', `/classes/%5FSession/${aliceSessionId}`, {
      sessionToken: alice.token,
      body: { expiresAt: { __type: 'Date', iso: '2100-01-01T00:00:00.000Z' } },
    });
    expect(putEnc.status).toBe(403);
    expect(putEnc.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    const del = await t.request('DELETE', `/sessions/${bobSessionId}`, { sessionToken: alice.token });
    expect(del.json.code).toBe(101);
    const batch = await t.request('POST', '/batch', {
      sessionToken: alice.token,
      body: {
        requests: [
          { method: 'DELETE', path: `/classes/_Session/${bobSessionId}` },
          {
            method: 'PUT',
            path: `/api/sessions/${bobSessionId}`,
            body: { user: pointer('_User', alice.id) },
          },
          { method: 'GET', path: '/classes/_Session' },
        ],
      },
    });
    expect(text(batch)).not.toContain(bob.token);
    const me = await t.request('GET', '/users/me', { sessionToken: bob.token });
    expect(me.status).toBe(200);
  });

  it('cross-user _User writes are refused on every alias and through batch', async () => {
    const insufficient = (action: string) => ({
      code: 206,
      error: `Insufficient auth to ${action} user ${bob.id}.`,
    });
    // The escaped alias is the same route as the alias (one normal form of a path).
    for (const p of [`/users/${bob.id}`, `/classes/_User/${bob.id}`, `/classes/%5FUser/${bob.id}`]) {
      const r = await t.request('PUT', p, { sessionToken: alice.token, body: { username: 'pwned' } });
      expect(r.status, `${p} ${r.text}`).toBe(400);
      expect(r.json).toEqual(insufficient('update'));
      const d = await t.request('DELETE', p, { sessionToken: alice.token });
      expect(d.status, `${p} ${d.text}`).toBe(400);
      expect(d.json).toEqual(insufficient('delete'));
    }
    const b = await t.request('POST', '/batch', {
      sessionToken: alice.token,
      body: {
        transaction: true,
        requests: [{ method: 'PUT', path: `/classes/_User/${bob.id}`, body: { username: 'pwned' } }],
      },
    });
    expect(b.status, b.text).toBe(400);
    expect(b.json).toEqual(insufficient('update'));
    const row = await t.request('GET', `/users/${bob.id}`, { as: 'master' });
    expect(row.json.username).toBe('bob');
  });
});

describe('security review: master-only surfaces', () => {
  const masterOnlyClasses = [
    '_JobStatus',
    '_Hooks',
    '_GlobalConfig',
    '_Idempotency',
    '_PushStatus',
    '_Audience',
  ];
  it('master-only classes are unreachable by REST, batch, include and subqueries', async () => {
    const masterOnly = { code: 119, error: 'unauthorized: master key is required' };
    for (const c of masterOnlyClasses) {
      // _GlobalConfig is not a class name at all on the class routes (the config has its own route).
      const reserved = c === '_GlobalConfig';
      for (const [m, p] of [
        ['GET', `/classes/${c}`],
        ['GET', `/classes/${c}/x`],
        ['POST', `/classes/${c}`],
        ['PUT', `/classes/${c}/x`],
        ['DELETE', `/classes/${c}/x`],
      ] as const) {
        const r = await t.request(m, p, {
          sessionToken: carol.token,
          body: m === 'GET' || m === 'DELETE' ? undefined : {},
        });
        expect(r.status, `${m} ${p} ${r.text}`).toBe(reserved ? 400 : 403);
        expect(r.json, `${m} ${p}`).toEqual(
          reserved
            ? { code: 103, error: `Invalid class name: "${c}". The name ${c} is reserved.` }
            : masterOnly,
        );
      }
      const sub = await t.request('GET', '/classes/Doc', {
        sessionToken: carol.token,
        query: { where: { ref: { $inQuery: { className: c, where: {} } } } },
      });
      expect(sub.status, sub.text).toBe(reserved ? 400 : 403);
      expect(sub.json, c).toEqual(reserved ? { code: 103, error: `Invalid class name: ${c}.` } : masterOnly);
    }
    for (const p of ['/schemas', '/schemas/Doc', '/devMailbox']) {
      const r = await t.request('GET', p, { sessionToken: carol.token });
      expect(r.status, p).toBe(403);
      expect(r.json, p).toEqual(masterOnly);
    }
    for (const [m, p] of [
      ['PUT', '/config'],
      ['DELETE', '/purge/Doc'],
      ['PUT', '/schemas/Doc'],
      ['POST', '/schemas/Evil'],
      ['DELETE', '/schemas/Doc'],
    ] as const) {
      const r = await t.request(m, p, { sessionToken: carol.token, body: { params: { a: 1 } } });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.json, `${m} ${p}`).toEqual(masterOnly);
      const b = await t.request('POST', '/batch', {
        sessionToken: carol.token,
        body: { requests: [{ method: m, path: p, body: { params: { a: 1 } } }] },
      });
      expect(b.json[0].error.code, `${m} ${p}`).toBe(119);
    }
  });

  it('GET /config hides masterKeyOnly entries', async () => {
    await t.request('PUT', '/config', {
      as: 'master',
      body: { params: { open: 1, hiddenParam: 'topsecret' }, masterKeyOnly: { hiddenParam: true } },
    });
    const r = await t.request('GET', '/config', {});
    expect(r.json.params.open).toBe(1);
    expect(text(r)).not.toContain('topsecret');
    expect(text(r)).not.toContain('hiddenParam');
  });

  it('_Role writes and relation ops by non-master are refused', async () => {
    const roles = await t.request('GET', '/roles', { as: 'master', query: { where: { name: 'Staff' } } });
    const staff = roles.json.results[0].objectId as string;
    for (const path of [`/roles/${staff}`, `/classes/_Role/${staff}`]) {
      const r = await t.request('PUT', path, {
        sessionToken: alice.token,
        body: { users: { __op: 'AddRelation', objects: [pointer('_User', alice.id)] } },
      });
      expect(r.status, r.text).toBe(400);
      expect(r.json).toEqual({ code: 119, error: 'Permission denied for action update on class _Role.' });
    }
    const create = await t.request('POST', '/roles', {
      sessionToken: alice.token,
      body: { name: 'Evil', users: { __op: 'AddRelation', objects: [pointer('_User', alice.id)] } },
    });
    expect(create.json.code).toBe(119);
    const del = await t.request('DELETE', `/roles/${staff}`, { sessionToken: carol.token });
    expect(del.json.code).toBe(119);
    const members = await t.request('GET', '/users', {
      as: 'master',
      query: { where: { $relatedTo: { object: pointer('_Role', staff), key: 'users' } } },
    });
    expect(members.json.results.map((u: { objectId: string }) => u.objectId)).toEqual([carol.id]);
  });
});

describe('security review: row ACL and protectedFields on records', () => {
  it('unreadable rows answer 101 exactly like missing ones (get, update, delete)', async () => {
    for (const id of [ids.alicePrivate, ids.masterOnly]) {
      const g = await t.request('GET', `/classes/Doc/${id}`, { sessionToken: bob.token });
      const missing = await t.request('GET', '/classes/Doc/nope123456', { sessionToken: bob.token });
      expect(g.json).toEqual(missing.json);
      const u = await t.request('PUT', `/classes/Doc/${id}`, {
        sessionToken: bob.token,
        body: { title: 'x' },
      });
      expect(u.json).toEqual(missing.json);
      const d = await t.request('DELETE', `/classes/Doc/${id}`, { sessionToken: bob.token });
      expect(d.json).toEqual(missing.json);
    }
  });

  it('protected field values cannot be inferred by where, order, count or subquery', async () => {
    const probes: Array<Record<string, unknown>> = [
      { where: { secret: { $gt: 's' } } },
      { where: { $or: [{ secret: 's-public' }] } },
      { where: { $nor: [{ secret: { $regex: '^s' } }] } },
      { order: '-secret' },
      { order: 'score,secret' },
      { where: { secret: { $exists: true } }, count: 1, limit: 0 },
      { where: { ref: { $inQuery: { className: 'Doc', where: { secret: 's-alice' } } } } },
      { where: { title: { $select: { query: { className: 'Doc', where: {} }, key: 'secret' } } } },
      { where: { title: { $dontSelect: { query: { className: 'Doc', where: {} }, key: 'secret' } } } },
      {
        where: {
          ref: {
            $notInQuery: {
              className: 'Doc',
              where: { ref: { $inQuery: { className: 'Doc', where: { secret: 's-alice' } } } },
            },
          },
        },
      },
    ];
    for (const q of probes) {
      const r = await t.request('GET', '/classes/Doc', { sessionToken: alice.token, query: q });
      expect(r.status, `${JSON.stringify(q)} ${r.text}`).toBe(400);
      expect(r.json).toEqual({ code: 119, error: 'This user is not allowed to query secret on class Doc.' });
      // The role exempted from protection may query it.
      const staff = await t.request('GET', '/classes/Doc', { sessionToken: carol.token, query: q });
      expect(staff.status, `${JSON.stringify(q)} ${staff.text}`).toBe(200);
    }
  });

  it('rows the caller cannot read are invisible to find, count and subqueries', async () => {
    const count = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: { where: { score: { $gte: 42 } }, count: 1, limit: 0 },
    });
    expect(count.json.count).toBe(0);
    const sub = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: { where: { ref: { $inQuery: { className: 'Doc', where: { score: 42 } } } } },
    });
    expect(sub.json.results).toEqual([]);
    const notIn = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: {
        where: { title: { $select: { query: { className: 'Doc', where: { score: 777 } }, key: 'title' } } },
      },
    });
    expect(notIn.json.results).toEqual([]);
  });

  it('include leaves unreadable pointers (single and in arrays) bare, and never hydrates sessions', async () => {
    const r = await t.request('GET', `/classes/Doc/${ids.pointing}`, {
      sessionToken: bob.token,
      query: { include: 'ref,refs,ref.ref,*' },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.ref).toEqual(pointer('Doc', ids.alicePrivate));
    expect(r.json.refs[0]).toEqual(pointer('Doc', ids.alicePrivate));
    expect(r.json.refs[2]).toEqual(pointer('_Session', bobSessionId));
    expect(text(r)).not.toContain('s-alice');
    expect(text(r)).not.toContain('alice-only');
    // Alice can read the included row, but not its protected field.
    const a = await t.request('GET', `/classes/Doc/${ids.pointing}`, {
      sessionToken: alice.token,
      query: { include: 'ref', keys: 'ref.secret,ref.title' },
    });
    expect(a.json.ref.title).toBe('alice-only');
    expect(text(a)).not.toContain('s-alice');
  });

  it('update responses do not echo protected fields', async () => {
    const r = await t.request('PUT', `/classes/Doc/${ids.public}`, {
      sessionToken: alice.token,
      body: {
        secret: { __op: 'Delete' },
        tags: { __op: 'Add', objects: ['t'] },
        score: { __op: 'Increment', amount: 0 },
      },
    });
    expect(r.status, r.text).toBe(200);
    const put = await t.request('PUT', `/classes/Doc/${ids.public}`, {
      sessionToken: alice.token,
      body: { secret: 'new-secret-value' },
    });
    expect(text(put)).not.toContain('new-secret-value');
    const created = await t.request('POST', '/classes/Doc', {
      sessionToken: alice.token,
      body: { secret: 'created-secret', title: 'c' },
    });
    expect(created.status).toBe(201);
    expect(text(created)).not.toContain('created-secret');
  });

  it('atomic ops on a write-only row do not return its stored values', async () => {
    const r = await t.request('PUT', `/classes/Doc/${ids.writeOnly}`, {
      sessionToken: bob.token,
      body: {
        score: { __op: 'Increment', amount: 0 },
        tags: { __op: 'AddUnique', objects: [] },
        'meta.n': { __op: 'Increment', amount: 0 },
      },
    });
    expect(r.status, r.text).toBe(200);
    expect(text(r)).not.toContain('777');
    expect(text(r)).not.toContain('wo-tag-1');
    expect(r.json.score).toBeUndefined();
    expect(r.json.tags).toBeUndefined();
    // In a batch too.
    const b = await t.request('POST', '/batch', {
      sessionToken: bob.token,
      body: {
        transaction: true,
        requests: [
          {
            method: 'PUT',
            path: `/classes/Doc/${ids.writeOnly}`,
            body: { score: { __op: 'Increment', amount: 0 } },
          },
        ],
      },
    });
    expect(b.status, b.text).toBe(200);
    expect(text(b)).not.toContain('777');
    // A readable row still gets its produced values.
    const own = await t.request('PUT', `/classes/Doc/${ids.alicePrivate}`, {
      sessionToken: alice.token,
      body: { score: { __op: 'Increment', amount: 1 } },
    });
    expect(own.json.score).toBe(43);
  });

  it('a transaction batch with a denied member changes nothing', async () => {
    const b = await t.request('POST', '/batch', {
      sessionToken: bob.token,
      body: {
        transaction: true,
        requests: [
          { method: 'PUT', path: `/classes/Doc/${ids.public}`, body: { title: 'changed-by-batch' } },
          { method: 'PUT', path: `/classes/Doc/${ids.alicePrivate}`, body: { title: 'stolen' } },
        ],
      },
    });
    expect(b.status).toBe(404);
    expect(b.json).toEqual({ code: 101, error: 'Object not found.' });
    const row = await t.request('GET', `/classes/Doc/${ids.public}`, { as: 'master' });
    expect(row.json.title).not.toBe('changed-by-batch');
  });

  it('$relatedTo on an unreadable owner matches nothing; on sessions it is refused', async () => {
    await t.request('PUT', `/classes/Doc/${ids.masterOnly}`, {
      as: 'master',
      body: { rel: { __op: 'AddRelation', objects: [pointer('Doc', ids.public)] } },
    });
    const r = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: { where: { $relatedTo: { object: pointer('Doc', ids.masterOnly), key: 'rel' } } },
    });
    expect(r.json.results).toEqual([]);
    const s = await t.request('GET', '/users', {
      sessionToken: bob.token,
      query: { where: { $relatedTo: { object: pointer('_Session', bobSessionId), key: 'user' } } },
    });
    expect(s.status, s.text).toBe(400);
    expect(s.json).toEqual({ code: 119, error: 'Permission denied for action get on class _Session.' });
  });
});

describe('security review: crafted names cannot inject SQL', () => {
  const evil = ['a"b', 'a;DROP TABLE "Doc"', 'a b', "a'b", 'a--', 'a)'];
  it('field and class names are validated on every path', async () => {
    for (const name of evil) {
      for (const param of ['keys', 'order', 'include', 'excludeKeys']) {
        const r = await t.request('GET', '/classes/Doc', {
          sessionToken: alice.token,
          query: { [param]: name },
        });
        expect(r.status, `${param}=${name} ${r.text}`).toBe(400);
        expect(r.json).toEqual({ code: 105, error: `Invalid ${param}: ${JSON.stringify(name)}.` });
      }
      const w = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { [name]: 1 } },
      });
      expect(w.status, w.text).toBe(400);
      expect(w.json).toEqual({
        code: 105,
        error: `Invalid where: invalid key name ${JSON.stringify(name)} (field names start with a letter and hold only letters, digits and _).`,
      });
      const sub = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { ref: { $inQuery: { className: name, where: {} } } } },
      });
      expect(sub.status, sub.text).toBe(400);
      expect(sub.json).toEqual({ code: 103, error: `Invalid class name: ${name}.` });
      const sel = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { title: { $select: { query: { className: 'Doc', where: {} }, key: name } } } },
      });
      expect(sel.status, sel.text).toBe(400);
      expect(sel.json).toEqual({ code: 105, error: `Invalid where: $select key ${JSON.stringify(name)}.` });
      const rel = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { $relatedTo: { object: pointer('Doc', ids.public), key: name } } },
      });
      expect(rel.status, rel.text).toBe(400);
      expect(rel.json).toEqual({
        code: 105,
        error: `Invalid where: $relatedTo key ${JSON.stringify(name)}.`,
      });
      const cls = await t.request('GET', `/classes/${encodeURIComponent(name)}`, {
        sessionToken: alice.token,
      });
      expect(cls.status, cls.text).toBe(400);
      expect(cls.json).toEqual({
        code: 103,
        error: `Invalid class name: ${JSON.stringify(name)}. Class names start with a letter and hold only letters, digits and _.`,
      });
      const body = await t.request('PUT', `/classes/Doc/${ids.public}`, {
        sessionToken: alice.token,
        body: { [name]: 1 },
      });
      expect(body.status, body.text).toBe(400);
      expect(body.json).toEqual({
        code: 105,
        error: `Invalid field name: ${name} (field names start with a letter and hold only letters, digits and _).`,
      });
      const relOp = await t.request('PUT', `/classes/Doc/${ids.public}`, {
        sessionToken: alice.token,
        body: { [name]: { __op: 'AddRelation', objects: [pointer('Doc', ids.public)] } },
      });
      expect(relOp.status, relOp.text).toBe(400);
      expect(relOp.json).toEqual({
        code: 105,
        error: `Invalid field name: ${name} (field names start with a letter and hold only letters, digits and _).`,
      });
    }
    const still = await t.request('GET', '/classes/Doc', { as: 'master', query: { count: 1, limit: 0 } });
    expect(still.json.count).toBeGreaterThan(0);
  });
});

describe('security review: _Installation', () => {
  const header = (id: string) => ({ 'X-Backend-Installation-Id': id });
  it('an update from another device answers 101 whatever it writes (no existence or value oracle)', async () => {
    const reg = await t.request('POST', '/installations', {
      headers: header('victim-installation-1'),
      body: { deviceType: 'ios', deviceToken: 'victim-token' },
    });
    expect(reg.status, reg.text).toBe(201);
    const id = reg.json.objectId as string;
    const missing = await t.request('PUT', '/installations/nope123456', {
      headers: header('attacker-installation'),
      body: { deviceType: 'android' },
    });
    for (const body of [
      { deviceType: 'android' },
      { deviceType: 'ios' },
      { installationId: 'wrong-guess' },
      { installationId: 'victim-installation-1' },
    ]) {
      const r = await t.request('PUT', `/installations/${id}`, {
        headers: header('attacker-installation'),
        body,
      });
      expect(r.json, JSON.stringify(body)).toEqual(missing.json);
    }
    const find = await t.request('GET', '/installations', { headers: header('victim-installation-1') });
    expect(find.status).toBe(403);
    expect(find.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    const sub = await t.request('GET', '/classes/Doc', {
      sessionToken: alice.token,
      query: {
        where: {
          title: { $select: { query: { className: '_Installation', where: {} }, key: 'deviceToken' } },
        },
      },
    });
    expect(sub.status).toBe(403);
    expect(sub.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    const del = await t.request('DELETE', `/installations/${id}`, {
      headers: header('victim-installation-1'),
    });
    expect(del.status).toBe(403);
    expect(del.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
  });

  it('protectedFields on _Installation apply to get and include', async () => {
    await setClp(t, '_Installation', {
      get: { '*': true },
      count: { '*': true },
      create: { '*': true },
      update: { '*': true },
      addField: {},
      protectedFields: { '*': ['deviceToken'] },
    });
    const reg = await t.request('POST', '/installations', {
      headers: header('victim-installation-2'),
      body: { deviceType: 'ios', deviceToken: 'victim-token-2' },
    });
    const id = reg.json.objectId as string;
    const get = await t.request('GET', `/installations/${id}`, {});
    expect(get.status).toBe(200);
    expect(text(get)).not.toContain('victim-token-2');
    const cnt = await t.request('GET', '/installations', {
      query: { where: { deviceToken: 'victim-token-2' }, count: 1, limit: 0 },
    });
    expect(cnt.status).toBe(400);
    expect(cnt.json).toEqual({
      code: 119,
      error: 'This user is not allowed to query deviceToken on class _Installation.',
    });
  });
});
