import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRole, createRow, createUser, pointer, setClp, type TestUser } from './helpers/access-world.ts';
import { buildNoteWorld } from './helpers/probe-worlds.ts';
import { startService, type TestService } from './helpers/service.ts';

let t: TestService;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t);
  bob = await createUser(t);
});
afterAll(async () => {
  await t?.close();
});

const roleCount = async () =>
  (await t.request('GET', '/roles', { as: 'master', query: { count: 1, limit: 0 } })).json.count as number;

describe('_Role rules', () => {
  it.each([
    ['a name with a dot', 'bad.name'],
    ['an empty name', ''],
    ['a name with a slash', 'a/b'],
    ['a non-string name', 42],
  ])('refuses %s with 139 and creates nothing', async (_label, name) => {
    const before = await roleCount();
    const res = await t.request('POST', '/roles', { as: 'master', body: { name } });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(typeof name === 'number' ? 111 : 139);
    expect(await roleCount()).toBe(before);
  });

  it('refuses a role without a name (139)', async () => {
    const res = await t.request('POST', '/roles', { as: 'master', body: { ACL: {} } });
    expect(res.json).toEqual({ code: 139, error: 'A role needs a name.' });
  });

  it('accepts letters, digits, _, - and spaces', async () => {
    const res = await t.request('POST', '/roles', { as: 'master', body: { name: 'Ok_name-1 two' } });
    expect(res.status).toBe(201);
  });

  it('refuses a duplicate name with 137 (unique index)', async () => {
    await createRole(t, 'Dup');
    const before = await roleCount();
    const res = await t.request('POST', '/roles', { as: 'master', body: { name: 'Dup' } });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(137);
    expect(await roleCount()).toBe(before);
  });

  it('keeps the name immutable, even for master (139)', async () => {
    const id = await createRole(t, 'Fixed');
    const res = await t.request('PUT', `/roles/${id}`, { as: 'master', body: { name: 'Other' } });
    expect(res.json).toEqual({ code: 139, error: "A role's name can only be set before it has been saved." });
    const row = await t.request('GET', `/roles/${id}`, { as: 'master' });
    expect(row.json.name).toBe('Fixed');
  });

  it('is master-only for writes and public for reads by default', async () => {
    const id = await createRole(t, 'Readable');
    const create = await t.request('POST', '/roles', { sessionToken: alice.token, body: { name: 'Mine' } });
    expect(create.status).toBe(400);
    expect(create.json).toEqual({ code: 119, error: 'Permission denied for action create on class _Role.' });
    const update = await t.request('PUT', `/roles/${id}`, {
      sessionToken: alice.token,
      body: { users: { __op: 'AddRelation', objects: [pointer('_User', alice.id)] } },
    });
    expect(update.json).toEqual({ code: 119, error: 'Permission denied for action update on class _Role.' });
    const del = await t.request('DELETE', `/roles/${id}`, {});
    expect(del.json).toEqual({ code: 119, error: 'Permission denied for action delete on class _Role.' });
    expect((await t.request('GET', `/roles/${id}`, {})).json.name).toBe('Readable');
    const schema = await t.request('GET', '/schemas/_Role', { as: 'master' });
    expect(schema.json.classLevelPermissions).toMatchObject({
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: {},
      update: {},
      delete: {},
      addField: {},
    });
  });

  it('refuses cycles (139) and leaves the graph as it was', async () => {
    const c = await createRole(t, 'CycC');
    const b = await createRole(t, 'CycB', { roles: [c] });
    const a = await createRole(t, 'CycA', { roles: [b] });
    const self = await t.request('PUT', `/roles/${a}`, {
      as: 'master',
      body: { roles: { __op: 'AddRelation', objects: [pointer('_Role', a)] } },
    });
    expect(self.json.code).toBe(139);
    const loop = await t.request('PUT', `/roles/${c}`, {
      as: 'master',
      body: { roles: { __op: 'AddRelation', objects: [pointer('_Role', a)] } },
    });
    expect(loop.status).toBe(400);
    expect(loop.json).toEqual({
      code: 139,
      error: 'A role cannot hold itself, directly or through other roles (cycle in the role graph).',
    });
    const held = await t.request('GET', '/roles', {
      as: 'master',
      query: { where: { $relatedTo: { object: pointer('_Role', c), key: 'roles' } } },
    });
    expect(held.json.results).toEqual([]);
    // A diamond is not a cycle.
    const d = await t.request('PUT', `/roles/${a}`, {
      as: 'master',
      body: { roles: { __op: 'AddRelation', objects: [pointer('_Role', c)] } },
    });
    expect(d.status).toBe(200);
  });
});

describe('effective roles', () => {
  it('grants a user the permissions of a role 5 levels up a chain, and takes them back', async () => {
    const carol = await createUser(t);
    const r5 = await createRole(t, 'Chain5', { users: [carol.id] });
    const r4 = await createRole(t, 'Chain4', { roles: [r5] });
    const r3 = await createRole(t, 'Chain3', { roles: [r4] });
    const r2 = await createRole(t, 'Chain2', { roles: [r3] });
    await createRole(t, 'Chain1', { roles: [r2] });
    const row = await createRow(t, 'ChainDoc', {
      title: 'top',
      ACL: { 'role:Chain1': { read: true, write: true } },
    });
    await setClp(t, 'ChainDoc', {
      find: { 'role:Chain1': true },
      get: { 'role:Chain1': true },
      count: { 'role:Chain1': true },
      create: {},
      update: { 'role:Chain1': true },
      delete: {},
      addField: {},
    });
    const seen = await t.request('GET', '/classes/ChainDoc', { sessionToken: carol.token });
    expect(seen.status).toBe(200);
    expect(seen.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([row]);
    const upd = await t.request('PUT', `/classes/ChainDoc/${row}`, {
      sessionToken: carol.token,
      body: { title: 'x' },
    });
    expect(upd.status).toBe(200);
    const other = await t.request('GET', '/classes/ChainDoc', { sessionToken: bob.token });
    expect(other.json).toEqual({ code: 119, error: 'Permission denied for action find on class ChainDoc.' });

    // Cutting the chain in the middle (a relation change) takes effect at once (cache invalidated).
    const cut = await t.request('PUT', `/roles/${r3}`, {
      as: 'master',
      body: { roles: { __op: 'RemoveRelation', objects: [pointer('_Role', r4)] } },
    });
    expect(cut.status).toBe(200);
    const after = await t.request('GET', `/classes/ChainDoc/${row}`, { sessionToken: carol.token });
    expect(after.json).toEqual({ code: 119, error: 'Permission denied for action get on class ChainDoc.' });
  });

  it('resolves a user in 500 roles quickly', async () => {
    const dave = await createUser(t);
    const ids: string[] = [];
    for (let i = 0; i < 500; i += 50) {
      const batch = await t.request('POST', '/batch', {
        as: 'master',
        body: {
          requests: Array.from({ length: 50 }, (_, j) => ({
            method: 'POST',
            path: '/roles',
            body: {
              name: `Many${i + j}`,
              users: { __op: 'AddRelation', objects: [pointer('_User', dave.id)] },
            },
          })),
        },
      });
      for (const r of batch.json) ids.push(r.success.objectId);
    }
    expect(ids).toHaveLength(500);
    await createRow(t, 'ManyDoc', { n: 1, ACL: { 'role:Many499': { read: true } } });
    await createRow(t, 'ManyDoc', { n: 2, ACL: { 'role:Many0': { read: true } } });
    await createRow(t, 'ManyDoc', { n: 3, ACL: { 'role:Nobody': { read: true } } });
    const started = performance.now();
    const res = await t.request('GET', '/classes/ManyDoc', {
      sessionToken: dave.token,
      query: { order: 'n' },
    });
    const cold = performance.now() - started;
    expect(res.json.results.map((r: { n: number }) => r.n)).toEqual([1, 2]);
    const warmStart = performance.now();
    for (let i = 0; i < 20; i++) await t.request('GET', '/classes/ManyDoc', { sessionToken: dave.token });
    const warm = (performance.now() - warmStart) / 20;
    expect(cold).toBeLessThan(500);
    expect(warm).toBeLessThan(50);
  });

  it('resolves roles in one recursive query that terminates on a cyclic graph written directly', async () => {
    const { store } = t.service.core;
    const erin = await createUser(t);
    const x = await createRole(t, 'LoopX', { users: [erin.id] });
    const y = await createRole(t, 'LoopY', { roles: [x] });
    // A cycle written behind the API's back (the API refuses it) still resolves.
    await store.transaction(async () => {
      const schema = t.service.core.schemas.get('_Role')!;
      await store.update(schema, {
        objectId: x,
        updatedAt: new Date().toISOString(),
        writes: [],
        relations: [{ field: 'roles', add: [y], remove: [] }],
      });
    });
    expect((await store.rolesOf(erin.id)).map((r) => r.name).sort()).toEqual(['LoopX', 'LoopY']);
  });
});

describe('roles seen from a world of notes (buildNoteWorld)', () => {
  let t: TestService;
  let alice: TestUser;
  let carol: TestUser;
  let ids: Record<string, string>;
  beforeAll(async () => {
    ({ t, alice, carol, ids } = await buildNoteWorld());
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('roles and inherited roles', () => {
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
});
