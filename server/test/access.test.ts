import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRow,
  createUser,
  pointer,
  setClp,
  type TestUser,
} from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

let t: TestService;
let alice: TestUser;
let bob: TestUser;
let hidden: string;
let aliceNote: string;
let bobNote: string;

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t);
  bob = await createUser(t);
  // Secret: find/get only for alice; Note: readable through pointer permissions only.
  await createClass(
    t,
    'Secret',
    { tag: { type: 'String' } },
    { find: { [alice.id]: true }, get: { [alice.id]: true } },
  );
  hidden = await createRow(t, 'Secret', { tag: 'x' });
  await createClass(t, 'Note', {
    owner: { type: 'Pointer', targetClass: '_User' },
    tag: { type: 'String' },
    items: { type: 'Relation', targetClass: 'Secret' },
  });
  await setClp(t, 'Note', { find: {}, get: {}, count: {}, readUserFields: ['owner'] });
  aliceNote = await createRow(t, 'Note', { owner: pointer('_User', alice.id), tag: 'a' });
  bobNote = await createRow(t, 'Note', { owner: pointer('_User', bob.id), tag: 'b' });
  await createClass(t, 'Holder', {
    secret: { type: 'Pointer', targetClass: 'Secret' },
    note: { type: 'Pointer', targetClass: 'Note' },
    tag: { type: 'String' },
  });
  await createRow(t, 'Holder', {
    secret: pointer('Secret', hidden),
    note: pointer('Note', aliceNote),
    tag: 'x',
  });
  await createRow(t, 'Holder', { note: pointer('Note', bobNote), tag: 'b' });
});
afterAll(async () => {
  await t?.close();
});

describe('layers across classes', () => {
  it('$inQuery and $select need CLP find on the inner class', async () => {
    for (const where of [
      { secret: { $inQuery: { className: 'Secret', where: {} } } },
      { tag: { $select: { query: { className: 'Secret', where: {} }, key: 'tag' } } },
      { tag: { $dontSelect: { query: { className: 'Secret', where: {} }, key: 'tag' } } },
      { secret: { $notInQuery: { className: 'Secret', where: {} } } },
    ]) {
      const res = await t.request('GET', '/classes/Holder', { sessionToken: bob.token, query: { where } });
      expect(res.json).toEqual({ code: 119, error: 'Permission denied for action find on class Secret.' });
      const count = await t.request('GET', '/classes/Holder', {
        sessionToken: bob.token,
        query: { where, count: 1, limit: 0 },
      });
      expect(count.json.code).toBe(119);
    }
    const ok = await t.request('GET', '/classes/Holder', {
      sessionToken: alice.token,
      query: { where: { secret: { $inQuery: { className: 'Secret', where: {} } } } },
    });
    expect(ok.json.results).toHaveLength(1);
  });

  it('subqueries apply the inner class pointer permissions in SQL', async () => {
    const q = { where: { note: { $inQuery: { className: 'Note', where: {} } } }, count: 1 };
    const a = await t.request('GET', '/classes/Holder', { sessionToken: alice.token, query: q });
    expect(a.json.results.map((r: any) => r.tag)).toEqual(['x']);
    expect(a.json.count).toBe(1);
    const b = await t.request('GET', '/classes/Holder', { sessionToken: bob.token, query: q });
    expect(b.json.results.map((r: any) => r.tag)).toEqual(['b']);
    const anon = await t.request('GET', '/classes/Holder', { query: q });
    expect(anon.json).toEqual({ code: 119, error: 'Permission denied for action find on class Note.' });
  });

  it('$relatedTo needs CLP get on the owner class and a readable owner row', async () => {
    await t.request('PUT', `/classes/Note/${aliceNote}`, {
      as: 'master',
      body: { items: { __op: 'AddRelation', objects: [pointer('Secret', hidden)] } },
    });
    const where = { $relatedTo: { object: pointer('Note', aliceNote), key: 'items' } };
    expect(
      (await t.request('GET', '/classes/Secret', { sessionToken: alice.token, query: { where } })).json
        .results,
    ).toHaveLength(1);
    await setClp(t, 'Secret', { find: { '*': true }, get: { '*': true } });
    // bob may read Secret now, but not alice's note (pointer permissions): nothing comes back.
    expect(
      (await t.request('GET', '/classes/Secret', { sessionToken: bob.token, query: { where } })).json.results,
    ).toEqual([]);
    await setClp(t, 'Secret', { find: { [alice.id]: true }, get: { [alice.id]: true } });
  });

  it('include: a class the caller may not get stays a bare pointer; pointer permissions apply', async () => {
    const res = await t.request('GET', '/classes/Holder', {
      sessionToken: bob.token,
      query: { include: 'secret,note', order: 'tag' },
    });
    const [b, x] = res.json.results;
    expect(b.note).toMatchObject({ __type: 'Object', objectId: bobNote, tag: 'b' });
    expect(x.secret).toEqual({ __type: 'Pointer', className: 'Secret', objectId: hidden });
    expect(x.note).toEqual({ __type: 'Pointer', className: 'Note', objectId: aliceNote });
  });
});

describe('bad input changes nothing', () => {
  it.each([
    [{ ACL: { 'bad key!': { read: true } } }, 123],
    [{ ACL: { '*': { read: 'yes' } } }, 123],
    [{ ACL: { '*': { admin: true } } }, 123],
    [{ ACL: [] }, 123],
  ])('malformed ACL %j -> %i', async (body, code) => {
    const id = await createRow(t, 'AclCheck', { n: 1 });
    const before = (await t.request('GET', `/classes/AclCheck/${id}`, { as: 'master' })).json;
    const res = await t.request('PUT', `/classes/AclCheck/${id}`, { body: { ...body, n: 2 } });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(code);
    expect((await t.request('GET', `/classes/AclCheck/${id}`, { as: 'master' })).json).toEqual(before);
  });

  it.each([
    [{ find: { '*': 'yes' } }],
    [{ fly: { '*': true } }],
    [{ find: { 'not a principal!': true } }],
    [{ readUserFields: 'owner' }],
    [{ protectedFields: { '*': 'email' } }],
  ])('malformed CLP %j -> 107, CLP unchanged', async (clp) => {
    const before = (await t.request('GET', '/schemas/Note', { as: 'master' })).json.classLevelPermissions;
    const res = await t.request('PUT', '/schemas/Note', {
      as: 'master',
      body: { classLevelPermissions: clp },
    });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(107);
    expect((await t.request('GET', '/schemas/Note', { as: 'master' })).json.classLevelPermissions).toEqual(
      before,
    );
  });

  it('CLP changes need the master key', async () => {
    const res = await t.request('PUT', '/schemas/Note', {
      sessionToken: alice.token,
      body: { classLevelPermissions: {} },
    });
    expect(res.status).toBe(403);
  });
});
