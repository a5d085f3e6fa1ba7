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
import { startService, type TestService } from './helpers/service.ts';

let t: TestService;
let owner: TestUser;

let other: TestUser;
let member: TestUser;

beforeAll(async () => {
  t = await startService();
  owner = await createUser(t);
  other = await createUser(t);
  member = await createUser(t);
  await createRole(t, 'PfRole', { users: [member.id] });
  await createClass(t, 'Pf', { a: { type: 'String' }, b: { type: 'String' }, c: { type: 'String' } });
  await setClp(t, 'Pf', {
    ...PUBLIC_OPERATIONS,
    protectedFields: {
      '*': ['a', 'b', 'c'],
      authenticated: ['a', 'b'],
      'role:PfRole': ['a'],
      [other.id]: ['b'],
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const fieldsOf = (row: Record<string, unknown>) => ['a', 'b', 'c'].filter((f) => f in row);

describe('protectedFields', () => {
  it('hides the intersection of the lists of every matching group; master sees everything', async () => {
    const id = await createRow(t, 'Pf', { a: '1', b: '2', c: '3' });
    const seen = async (opts: object) => fieldsOf((await t.request('GET', `/classes/Pf/${id}`, opts)).json);
    expect(await seen({ as: 'master' })).toEqual(['a', 'b', 'c']);
    expect(await seen({})).toEqual([]); // * only
    expect(await seen({ sessionToken: owner.token })).toEqual(['c']); // * ∩ authenticated
    expect(await seen({ sessionToken: member.token })).toEqual(['b', 'c']); // * ∩ authenticated ∩ role
    expect(await seen({ sessionToken: other.token })).toEqual(['a', 'c']); // * ∩ authenticated ∩ own id
    const found = await t.request('GET', '/classes/Pf', { query: { where: { objectId: id } } });
    expect(fieldsOf(found.json.results[0])).toEqual([]);
  });

  it('refuses where and order on a protected field (119) so the value cannot be probed', async () => {
    for (const query of [
      { where: { a: '1' } },
      { where: { a: { $regex: '^1' } } },
      { where: { $or: [{ a: { $exists: true } }] } },
      { order: '-a' },
    ]) {
      const res = await t.request('GET', '/classes/Pf', { query });
      expect([res.status, res.json]).toEqual([
        400,
        { code: 119, error: 'This user is not allowed to query a on class Pf.' },
      ]);
    }
    // A field the caller can see may be queried.
    const ok = await t.request('GET', '/classes/Pf', {
      sessionToken: owner.token,
      query: { where: { c: '3' } },
    });
    expect(ok.status).toBe(200);
    expect(
      (await t.request('GET', '/classes/Pf', { as: 'master', query: { where: { a: '1' } } })).status,
    ).toBe(200);
  });

  it('guards subqueries: $select on a protected key and an inner where on a protected field', async () => {
    await createClass(t, 'PfOuter', { key: { type: 'String' }, ref: { type: 'Pointer', targetClass: 'Pf' } });
    const select = await t.request('GET', '/classes/PfOuter', {
      query: { where: { key: { $select: { query: { className: 'Pf', where: {} }, key: 'a' } } } },
    });
    expect(select.json).toEqual({ code: 119, error: 'This user is not allowed to query a on class Pf.' });
    const inQuery = await t.request('GET', '/classes/PfOuter', {
      query: { where: { ref: { $inQuery: { className: 'Pf', where: { b: '2' } } } } },
    });
    expect(inQuery.json).toEqual({ code: 119, error: 'This user is not allowed to query b on class Pf.' });
  });

  it('accepts non-master writes to a protected field, strips it from reads and write responses', async () => {
    const created = await t.request('POST', '/classes/Pf', {
      body: { a: 'written', n: { __op: 'Increment', amount: 1 }, tags: { __op: 'Add', objects: ['x'] } },
    });
    expect(created.status).toBe(201);
    await setClp(t, 'Pf', {
      ...PUBLIC_OPERATIONS,
      protectedFields: {
        '*': ['a', 'b', 'c', 'n'],
        authenticated: ['a', 'b'],
        'role:PfRole': ['a'],
        [other.id]: ['b'],
      },
    });
    const upd = await t.request('PUT', `/classes/Pf/${created.json.objectId}`, {
      body: { n: { __op: 'Increment', amount: 2 }, tags: { __op: 'Add', objects: ['y'] } },
    });
    expect(upd.status).toBe(200);
    expect(upd.json).not.toHaveProperty('n');
    expect(upd.json.tags).toEqual(['x', 'y']);
    const stored = await t.request('GET', `/classes/Pf/${created.json.objectId}`, { as: 'master' });
    expect(stored.json).toMatchObject({ a: 'written', n: 3 });
    const create2 = await t.request('POST', '/classes/Pf', { body: { n: { __op: 'Increment', amount: 1 } } });
    expect(create2.json).not.toHaveProperty('n');
  });

  it('shows a field to the user a userField points at, and hides it elsewhere', async () => {
    await createClass(t, 'PfDoc', {
      owner: { type: 'Pointer', targetClass: '_User' },
      secret: { type: 'String' },
    });
    await setClp(t, 'PfDoc', {
      ...PUBLIC_OPERATIONS,
      protectedFields: { '*': ['secret'], 'userField:owner': [] },
    });
    const mine = await createRow(t, 'PfDoc', { owner: pointer('_User', owner.id), secret: 'mine' });
    const theirs = await createRow(t, 'PfDoc', { owner: pointer('_User', other.id), secret: 'theirs' });
    const res = await t.request('GET', '/classes/PfDoc', {
      sessionToken: owner.token,
      query: { order: 'createdAt' },
    });
    const bySecret = Object.fromEntries(res.json.results.map((r: any) => [r.objectId, r.secret]));
    expect(bySecret).toEqual({ [mine]: 'mine', [theirs]: undefined });
  });

  it('applies to included rows too', async () => {
    const target = await createRow(t, 'Pf', { a: '1', b: '2', c: '3' });
    await createRow(t, 'PfOuter', { key: 'inc', ref: pointer('Pf', target) });
    const res = await t.request('GET', '/classes/PfOuter', {
      sessionToken: owner.token,
      query: { where: { key: 'inc' }, include: 'ref' },
    });
    expect(res.json.results[0].ref).toMatchObject({ __type: 'Object', objectId: target, c: '3' });
    expect(fieldsOf(res.json.results[0].ref)).toEqual(['c']);
  });

  it('_User starts with email protected from everyone but master (owner not exempt by default)', async () => {
    const { store, schemas } = t.service.core;
    await store.update(schemas.get('_User')!, {
      objectId: owner.id,
      updatedAt: new Date().toISOString(),
      writes: [{ field: 'email', subPath: [], kind: 'set', value: 'o@example.com', type: 'String' }],
      relations: [],
    });
    const schema = await t.request('GET', '/schemas/_User', { as: 'master' });
    expect(schema.json.classLevelPermissions.protectedFields).toEqual({ '*': ['email'] });
    expect((await t.request('GET', `/users/${owner.id}`, { as: 'master' })).json.email).toBe('o@example.com');
    expect(
      (await t.request('GET', `/users/${owner.id}`, { sessionToken: other.token })).json,
    ).not.toHaveProperty('email');
    expect(
      (await t.request('GET', `/users/${owner.id}`, { sessionToken: owner.token })).json,
    ).not.toHaveProperty('email');
    const probe = await t.request('GET', '/users', { query: { where: { email: 'o@example.com' } } });
    expect(probe.json).toEqual({
      code: 119,
      error: 'This user is not allowed to query email on class _User.',
    });
  });

  it('self-pointer recipe: a _User field shown only to its own user', async () => {
    const add = await t.request('PUT', '/schemas/_User', {
      as: 'master',
      body: { fields: { self: { type: 'Pointer', targetClass: '_User' }, phone: { type: 'String' } } },
    });
    expect(add.status).toBe(200);
    // The recipe fills `self` with a before-save hook; the test fills it with the master key.
    for (const u of [owner, other]) {
      const res = await t.request('PUT', `/classes/_User/${u.id}`, {
        as: 'master',
        body: { self: pointer('_User', u.id), phone: `phone-${u.id}` },
      });
      expect(res.status, res.text).toBe(200);
    }
    await setClp(t, '_User', {
      ...PUBLIC_OPERATIONS,
      protectedFields: { '*': ['email', 'phone'], 'userField:self': ['email'] },
    });
    const own = await t.request('GET', `/users/${owner.id}`, { sessionToken: owner.token });
    expect(own.json.phone).toBe(`phone-${owner.id}`);
    expect(own.json).not.toHaveProperty('email');
    const others = await t.request('GET', `/users/${owner.id}`, { sessionToken: other.token });
    expect(others.json).not.toHaveProperty('phone');
    const anon = await t.request('GET', `/users/${owner.id}`, {});
    expect(anon.json).not.toHaveProperty('phone');
    const list = await t.request('GET', '/users', {
      sessionToken: owner.token,
      query: { where: { objectId: { $in: [owner.id, other.id] } } },
    });
    const phones = Object.fromEntries(list.json.results.map((r: any) => [r.objectId, r.phone]));
    expect(phones).toEqual({ [owner.id]: `phone-${owner.id}`, [other.id]: undefined });
  });
});

describe('protectedFields options', () => {
  let s: TestService;
  let u: TestUser;
  let v: TestUser;
  beforeAll(async () => {
    s = await startService({ protectedFieldsOwnerExempt: true, protectedFieldsSaveResponseExempt: true });
    u = await createUser(s);
    v = await createUser(s);
    await s.request('PUT', `/classes/_User/${u.id}`, { as: 'master', body: { email: 'u@example.com' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('protectedFieldsOwnerExempt shows the owner its whole _User row', async () => {
    expect((await s.request('GET', `/users/${u.id}`, { sessionToken: u.token })).json.email).toBe(
      'u@example.com',
    );
    expect((await s.request('GET', `/users/${u.id}`, { sessionToken: v.token })).json).not.toHaveProperty(
      'email',
    );
  });

  it('protectedFieldsSaveResponseExempt echoes protected values in write responses', async () => {
    await createClass(s, 'PfEcho', {}, { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['n'] } } as never);
    const res = await s.request('POST', '/classes/PfEcho', { body: { n: { __op: 'Increment', amount: 4 } } });
    expect(res.json.n).toBe(4);
    const read = await s.request('GET', `/classes/PfEcho/${res.json.objectId}`, {});
    expect(read.json).not.toHaveProperty('n');
  });
});
