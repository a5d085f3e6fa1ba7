import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../src/storage/sql/driver.ts';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';
import { credentialHeaders, startService, type TestService } from './helpers/service.ts';

async function seed(t: TestService, className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`seed ${className} failed: ${res.status} ${res.text}`);
  return res.json.objectId as string;
}

const ptr = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });

async function fetchRow(t: TestService, className: string, id: string) {
  const res = await t.request('GET', `/classes/${className}/${id}`, { as: 'master' });
  expect(res.status, res.text).toBe(200);
  return res.json;
}

/** objectIds related to `owner` through `key`, by `$relatedTo`. */
async function relatedIds(t: TestService, target: string, owner: string, ownerId: string, key: string) {
  const res = await t.request('GET', `/classes/${target}`, {
    query: { where: { $relatedTo: { object: ptr(owner, ownerId), key } } },
  });
  expect(res.status, res.text).toBe(200);
  return (res.json.results as Array<{ objectId: string }>).map((r) => r.objectId).sort();
}

const ops: Scenario[] = [
  // Increment
  {
    name: 'Increment adds to a number and the response carries the new value',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { n: { __op: 'Increment', amount: 5 } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.n).toBe(15);
      expect(res.json.updatedAt).toBeTypeOf('string');
      expect((await fetchRow(ctx.t, 'Counter', ctx.vars.c1!)).n).toBe(15);
    },
  },
  {
    name: 'Increment by a negative amount decrements',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { n: { __op: 'Increment', amount: -20 } },
    status: 200,
    expect: { n: -5 },
  },
  {
    name: 'Increment by a fraction',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { n: { __op: 'Increment', amount: 0.5 } },
    status: 200,
    expect: { n: -4.5 },
  },
  {
    name: 'Increment of an unset field starts from 0 (and creates the Number field)',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { fresh: { __op: 'Increment', amount: 2 } },
    status: 200,
    expect: { fresh: 2 },
    after: async (ctx) => {
      const schema = await ctx.t.request('GET', '/schemas/Counter', { as: 'master' });
      expect(schema.json.fields.fresh).toEqual({ type: 'Number' });
    },
  },
  {
    name: 'Increment on create answers the produced value',
    method: 'POST',
    path: '/classes/Counter',
    body: { n: { __op: 'Increment', amount: 3 } },
    status: 201,
    after: async (ctx, res) => {
      expect(res.json.n).toBe(3);
      expect((await fetchRow(ctx.t, 'Counter', res.json.objectId)).n).toBe(3);
    },
  },
  {
    name: 'Increment without a numeric amount is 111',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { n: { __op: 'Increment', amount: '1' } },
    status: 400,
    code: 111,
  },
  {
    name: 'Increment on a String field is 111 and changes nothing',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { label: { __op: 'Increment', amount: 1 }, n: { __op: 'Increment', amount: 100 } },
    status: 400,
    code: 111,
    after: async (ctx) => {
      const row = await fetchRow(ctx.t, 'Counter', ctx.vars.c1!);
      expect(row.label).toBe('counter');
      expect(row.n).toBe(-4.5);
    },
  },
  {
    name: 'Increment of a sub-key of an Object field',
    method: 'PUT',
    path: '/classes/Counter/{c1}',
    body: { 'stats.views': { __op: 'Increment', amount: 4 } },
    status: 200,
    after: async (ctx) => {
      expect((await fetchRow(ctx.t, 'Counter', ctx.vars.c1!)).stats).toEqual({ views: 5, likes: 2 });
    },
  },
  {
    name: 'several sub-key operations on one Object field, interleaved with other fields, all apply',
    method: 'PUT',
    path: '/classes/Counter/{c2}',
    body: {
      'stats.views': { __op: 'Increment', amount: 1 },
      n: { __op: 'Increment', amount: 10 },
      'stats.likes': { __op: 'Increment', amount: 2 },
      label: 'relabelled',
      'stats.tags': { __op: 'AddUnique', objects: ['x', 'y'] },
      'stats.note': 'set',
      'stats.old': { __op: 'Delete' },
    },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.n).toBe(11);
      const row = await fetchRow(ctx.t, 'Counter', ctx.vars.c2!);
      expect(row.n).toBe(11);
      expect(row.label).toBe('relabelled');
      expect(row.stats).toEqual({ views: 2, likes: 4, tags: ['x', 'y'], note: 'set' });
    },
  },

  // Add, AddUnique, Remove
  {
    name: 'Add appends (duplicates kept) and answers the new array',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { items: { __op: 'Add', objects: ['b', 'c'] } },
    status: 200,
    expect: { items: ['a', 'b', 'b', 'c'] },
  },
  {
    name: 'AddUnique appends only what is missing',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { items: { __op: 'AddUnique', objects: ['a', 'd', 'd'] } },
    status: 200,
    expect: { items: ['a', 'b', 'b', 'c', 'd'] },
  },
  {
    name: 'Remove drops every occurrence',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { items: { __op: 'Remove', objects: ['b', 'zzz'] } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.items).toEqual(['a', 'c', 'd']);
      expect((await fetchRow(ctx.t, 'Bag', ctx.vars.b1!)).items).toEqual(['a', 'c', 'd']);
    },
  },
  {
    name: 'Add keeps numbers, objects and nested arrays as JSON',
    method: 'PUT',
    path: '/classes/Bag/{b2}',
    body: { mixed: { __op: 'Add', objects: [1, { k: 'v' }, [2, 3], true, null] } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.mixed).toEqual([0, 1, { k: 'v' }, [2, 3], true, null]);
      expect((await fetchRow(ctx.t, 'Bag', ctx.vars.b2!)).mixed).toEqual([
        0,
        1,
        { k: 'v' },
        [2, 3],
        true,
        null,
      ]);
    },
  },
  {
    name: 'AddUnique compares objects and numbers by value',
    method: 'PUT',
    path: '/classes/Bag/{b2}',
    body: { mixed: { __op: 'AddUnique', objects: [1, { k: 'v' }, { k: 'w' }, 7] } },
    status: 200,
    expect: { mixed: [0, 1, { k: 'v' }, [2, 3], true, null, { k: 'w' }, 7] },
  },
  {
    name: 'Remove compares objects by value',
    method: 'PUT',
    path: '/classes/Bag/{b2}',
    body: { mixed: { __op: 'Remove', objects: [{ k: 'v' }, 0, [2, 3]] } },
    status: 200,
    expect: { mixed: [1, true, null, { k: 'w' }, 7] },
  },
  {
    name: 'AddUnique tells true from 1 and finds null already there',
    method: 'PUT',
    path: '/classes/Bag/{b2}',
    body: { mixed: { __op: 'AddUnique', objects: [true, false, null, 1] } },
    status: 200,
    expect: { mixed: [1, true, null, { k: 'w' }, 7, false] },
  },
  {
    name: 'Remove of true keeps 1, Remove of null drops null',
    method: 'PUT',
    path: '/classes/Bag/{b2}',
    body: { mixed: { __op: 'Remove', objects: [true, null] } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.mixed).toEqual([1, { k: 'w' }, 7, false]);
      expect((await fetchRow(ctx.t, 'Bag', ctx.vars.b2!)).mixed).toEqual([1, { k: 'w' }, 7, false]);
    },
  },
  {
    name: 'Add of pointers, then Remove of one of them (by objectId)',
    method: 'PUT',
    path: '/classes/Bag/{b3}',
    body: { refs: { __op: 'Add', objects: [{ __type: 'Pointer', className: 'Bag', objectId: '{b1}' }] } },
    status: 200,
    after: async (ctx) => {
      const again = await ctx.t.request('PUT', `/classes/Bag/${ctx.vars.b3}`, {
        body: { refs: { __op: 'Remove', objects: [ptr('Bag', ctx.vars.b1!)] } },
      });
      expect(again.status, again.text).toBe(200);
      expect(again.json.refs).toEqual([ptr('Bag', ctx.vars.b2!)]);
    },
  },
  {
    name: 'Add on an unset field starts from []',
    method: 'PUT',
    path: '/classes/Bag/{b3}',
    body: { newList: { __op: 'Add', objects: ['x'] } },
    status: 200,
    expect: { newList: ['x'] },
  },
  {
    name: 'Add/AddUnique/Remove on create answer the produced arrays',
    method: 'POST',
    path: '/classes/Bag',
    body: {
      items: { __op: 'AddUnique', objects: ['x', 'x', 'y'] },
      mixed: { __op: 'Add', objects: [1, 1] },
      newList: { __op: 'Remove', objects: ['q'] },
    },
    status: 201,
    expect: { items: ['x', 'y'], mixed: [1, 1], newList: [] },
  },
  {
    name: 'Add without an objects array is 111',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { items: { __op: 'Add', objects: 'x' } },
    status: 400,
    code: 111,
  },
  {
    name: 'Add to a String field is 111',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { name: { __op: 'Add', objects: ['x'] } },
    status: 400,
    code: 111,
  },
  {
    name: 'Add into an array inside an Object field',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { 'meta.tags': { __op: 'AddUnique', objects: ['t1', 't2'] } },
    status: 200,
    after: async (ctx) => {
      expect((await fetchRow(ctx.t, 'Bag', ctx.vars.b1!)).meta).toEqual({ tags: ['t0', 't1', 't2'] });
    },
  },

  // Delete
  {
    name: 'Delete removes a field',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { name: { __op: 'Delete' } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json).not.toHaveProperty('name');
      expect(await fetchRow(ctx.t, 'Bag', ctx.vars.b1!)).not.toHaveProperty('name');
    },
  },
  {
    name: 'Delete of a field that was never set is harmless',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { neverSet: { __op: 'Delete' } },
    status: 200,
  },
  {
    name: 'an unknown __op is 111',
    method: 'PUT',
    path: '/classes/Bag/{b1}',
    body: { items: { __op: 'Multiply', amount: 2 } },
    status: 400,
    code: 111,
    errorContains: 'Multiply',
  },

  // Relations
  {
    name: 'AddRelation creates the Relation field and the join rows',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      members: {
        __op: 'AddRelation',
        objects: [
          { __type: 'Pointer', className: 'Player', objectId: '{p1}' },
          { __type: 'Pointer', className: 'Player', objectId: '{p2}' },
        ],
      },
    },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json).not.toHaveProperty('members');
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.team!, 'members')).toEqual(
        [ctx.vars.p1, ctx.vars.p2].sort(),
      );
      const schema = await ctx.t.request('GET', '/schemas/Team', { as: 'master' });
      expect(schema.json.fields.members).toEqual({ type: 'Relation', targetClass: 'Player' });
      const row = await fetchRow(ctx.t, 'Team', ctx.vars.team!);
      expect(row.members).toEqual({ __type: 'Relation', className: 'Player' });
    },
  },
  {
    name: 'AddRelation of an existing member is idempotent',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      members: {
        __op: 'AddRelation',
        objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p1}' }],
      },
    },
    status: 200,
    after: async (ctx) => {
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.team!, 'members')).toHaveLength(2);
    },
  },
  {
    name: 'RemoveRelation drops join rows',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      members: {
        __op: 'RemoveRelation',
        objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p1}' }],
      },
    },
    status: 200,
    after: async (ctx) => {
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.team!, 'members')).toEqual([ctx.vars.p2]);
    },
  },
  {
    name: 'Batch applies AddRelation and RemoveRelation together',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      members: {
        __op: 'Batch',
        ops: [
          {
            __op: 'AddRelation',
            objects: [
              { __type: 'Pointer', className: 'Player', objectId: '{p1}' },
              { __type: 'Pointer', className: 'Player', objectId: '{p3}' },
            ],
          },
          { __op: 'RemoveRelation', objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p2}' }] },
        ],
      },
    },
    status: 200,
    after: async (ctx) => {
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.team!, 'members')).toEqual(
        [ctx.vars.p1, ctx.vars.p3].sort(),
      );
    },
  },
  {
    name: 'Batch with something other than relation ops is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { members: { __op: 'Batch', ops: [{ __op: 'Increment', amount: 1 }] } },
    status: 400,
    code: 111,
  },
  {
    name: 'Batch with no ops is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { members: { __op: 'Batch', ops: [] } },
    status: 400,
    code: 111,
  },
  {
    name: 'AddRelation on create stores the join rows',
    method: 'POST',
    path: '/classes/Team',
    body: {
      name: 'new',
      members: {
        __op: 'AddRelation',
        objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p2}' }],
      },
    },
    status: 201,
    after: async (ctx, res) => {
      expect(await relatedIds(ctx.t, 'Player', 'Team', res.json.objectId, 'members')).toEqual([ctx.vars.p2]);
    },
  },
  {
    name: 'assigning a plain array to a Relation field is 111 with a clear text, and changes nothing',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { name: 'renamed', members: [{ __type: 'Pointer', className: 'Player', objectId: '{p2}' }] },
    status: 400,
    code: 111,
    errorContains: 'members is a Relation; change it with AddRelation or RemoveRelation',
    after: async (ctx) => {
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.team!, 'members')).toEqual(
        [ctx.vars.p1, ctx.vars.p3].sort(),
      );
      expect((await fetchRow(ctx.t, 'Team', ctx.vars.team!)).name).toBe('team');
    },
  },
  {
    name: 'assigning a single pointer to a Relation field is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { members: { __type: 'Pointer', className: 'Player', objectId: '{p2}' } },
    status: 400,
    code: 111,
    errorContains: 'Relation',
  },
  {
    name: 'Add (array op) on a Relation field is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      members: { __op: 'Add', objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p2}' }] },
    },
    status: 400,
    code: 111,
    errorContains: 'AddRelation',
  },
  {
    name: 'Delete on a Relation field is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { members: { __op: 'Delete' } },
    status: 400,
    code: 111,
  },
  {
    name: 'AddRelation with a pointer to another class is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      members: { __op: 'AddRelation', objects: [{ __type: 'Pointer', className: 'Bag', objectId: '{b1}' }] },
    },
    status: 400,
    code: 111,
  },
  {
    name: 'AddRelation with a non-pointer is 106',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { members: { __op: 'AddRelation', objects: ['{p1}'] } },
    status: 400,
    code: 106,
  },
  {
    name: 'AddRelation with an empty list is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: { members: { __op: 'AddRelation', objects: [] } },
    status: 400,
    code: 111,
  },
  {
    name: 'AddRelation on a non-relation field is 111',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      name: { __op: 'AddRelation', objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p1}' }] },
    },
    status: 400,
    code: 111,
  },
  {
    name: 'a body with one bad operation changes nothing, valid operations included',
    method: 'PUT',
    path: '/classes/Team/{team}',
    body: {
      name: 'should not be written',
      score: { __op: 'Increment', amount: 1 },
      members: {
        __op: 'RemoveRelation',
        objects: [{ __type: 'Pointer', className: 'Player', objectId: '{p1}' }],
      },
      tags: { __op: 'AddUnique', objects: 'not an array' },
    },
    status: 400,
    code: 111,
    after: async (ctx) => {
      const row = await fetchRow(ctx.t, 'Team', ctx.vars.team!);
      expect(row.name).toBe('team');
      expect(row).not.toHaveProperty('score');
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.team!, 'members')).toEqual(
        [ctx.vars.p1, ctx.vars.p3].sort(),
      );
      const schema = await ctx.t.request('GET', '/schemas/Team', { as: 'master' });
      expect(schema.json.fields).not.toHaveProperty('score');
      expect(schema.json.fields).not.toHaveProperty('tags');
    },
  },
  {
    name: 'deleting the owner removes its join rows',
    method: 'DELETE',
    path: '/classes/Team/{doomedTeam}',
    status: 200,
    after: async (ctx) => {
      expect(await relatedIds(ctx.t, 'Player', 'Team', ctx.vars.doomedTeam!, 'members')).toEqual([]);
      // The related rows themselves stay.
      expect((await fetchRow(ctx.t, 'Player', ctx.vars.p1!)).name).toBe('p1');
    },
  },
];

runScenarios('operations', ops, {
  setup: async (ctx) => {
    const t = ctx.t;
    ctx.vars.c1 = await seed(t, 'Counter', { n: 10, label: 'counter', stats: { views: 1, likes: 2 } });
    ctx.vars.c2 = await seed(t, 'Counter', {
      n: 1,
      label: 'two',
      stats: { views: 1, likes: 2, tags: ['x'], old: true },
    });
    ctx.vars.b1 = await seed(t, 'Bag', { items: ['a', 'b'], name: 'bag', meta: { tags: ['t0'] } });
    ctx.vars.b2 = await seed(t, 'Bag', { mixed: [0] });
    ctx.vars.b3 = await seed(t, 'Bag', { refs: [ptr('Bag', ctx.vars.b1), ptr('Bag', ctx.vars.b2)] });
    ctx.vars.p1 = await seed(t, 'Player', { name: 'p1' });
    ctx.vars.p2 = await seed(t, 'Player', { name: 'p2' });
    ctx.vars.p3 = await seed(t, 'Player', { name: 'p3' });
    ctx.vars.team = await seed(t, 'Team', { name: 'team' });
    ctx.vars.doomedTeam = await seed(t, 'Team', {
      name: 'doomed',
      members: { __op: 'AddRelation', objects: [ptr('Player', ctx.vars.p1)] },
    });
  },
});

describe('operations: concurrency', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('50 concurrent increments of one field end at exactly 50', async () => {
    const id = await seed(t, 'Hits', { count: 0 });
    const url = `${t.url}/classes/Hits/${id}`;
    const headers = { ...credentialHeaders('rest'), 'Content-Type': 'application/json' };
    const body = JSON.stringify({ count: { __op: 'Increment', amount: 1 } });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        fetch(url, { method: 'PUT', headers, body }).then(async (r) => ({
          status: r.status,
          json: (await r.json()) as { count: number },
        })),
      ),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    // Every response saw a distinct intermediate value: the increments were applied one by one.
    expect(new Set(responses.map((r) => r.json.count)).size).toBe(50);
    expect(Math.max(...responses.map((r) => r.json.count))).toBe(50);
    expect((await fetchRow(t, 'Hits', id)).count).toBe(50);
  });

  it('concurrent AddUnique of the same values keeps each value once', async () => {
    const id = await seed(t, 'Tags', { tags: [] });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.request('PUT', `/classes/Tags/${id}`, {
          body: { tags: { __op: 'AddUnique', objects: [`t${i % 5}`] } },
        }),
      ),
    );
    expect(((await fetchRow(t, 'Tags', id)).tags as string[]).sort()).toEqual(['t0', 't1', 't2', 't3', 't4']);
  });

  it('concurrent AddRelation calls all land in the join table', async () => {
    const owner = await seed(t, 'Club', { name: 'c' });
    const members = await Promise.all(Array.from({ length: 10 }, (_, i) => seed(t, 'Member', { i })));
    const results = await Promise.all(
      members.map((m) =>
        t.request('PUT', `/classes/Club/${owner}`, {
          body: { members: { __op: 'AddRelation', objects: [ptr('Member', m)] } },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(members.map(() => 200));
    expect(await relatedIds(t, 'Member', 'Club', owner, 'members')).toEqual([...members].sort());
  });
});

describe('operations: relations live in join tables', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('AddRelation and RemoveRelation write and delete join rows, not a column', async () => {
    const a = await seed(t, 'Item', { name: 'a' });
    const b = await seed(t, 'Item', { name: 'b' });
    const owner = await seed(t, 'Box', {
      items: { __op: 'AddRelation', objects: [ptr('Item', a), ptr('Item', b)] },
    });
    const driver = (
      t.service.core.store as unknown as {
        driver: SqlDriver;
      }
    ).driver;
    const join = () =>
      driver.all('SELECT "owningId", "relatedId" FROM "_Join:items:Box" ORDER BY "relatedId"', []);
    expect(await join()).toEqual([a, b].sort().map((relatedId) => ({ owningId: owner, relatedId })));
    const columns = await driver.all(driver.dialect.tableColumns(driver.dialect.placeholder(1)), ['Box']);
    expect(columns.map((c) => c.name)).not.toContain('items');
    await t.request('PUT', `/classes/Box/${owner}`, {
      body: { items: { __op: 'RemoveRelation', objects: [ptr('Item', a)] } },
    });
    expect(await join()).toEqual([{ owningId: owner, relatedId: b }]);
  });
});
