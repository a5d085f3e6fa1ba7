import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { QueryNode } from '../src/kernel/query.ts';
import type { OrderKey, Row } from '../src/kernel/records.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * POST /aggregate on more documents than its bounds (lowered here through the options
 * `aggregate.maxLookupMatches` and `aggregate.maxSortDocuments`): `$lookup` reads a page of
 * documents per query, `$sort` runs in the store when the stages before it allow, and past a
 * bound the answer is a 102 that names the option.
 */

const ORDERS = 250;
const CUSTOMERS = 10;

let t: TestService;
/** The finds the store was asked for during a test: class, where and order. */
let finds: Array<{ className: string; where: QueryNode; order: OrderKey[] }> = [];
let restore: () => void = () => undefined;

const aggregate = (className: string, pipeline: unknown) =>
  t.request('POST', `/aggregate/${className}`, { as: 'master', body: { pipeline } });

async function seed(className: string, rows: Array<Record<string, unknown>>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < rows.length; i += 100) {
    const res = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        requests: rows
          .slice(i, i + 100)
          .map((body) => ({ method: 'POST', path: `/classes/${className}`, body })),
      },
    });
    expect(res.status, res.text).toBe(200);
    for (const answer of res.json) ids.push(answer.success.objectId);
  }
  return ids;
}

/** Records every find the store answers (the real store: each call goes through). */
function recordFinds(): void {
  const store = t.service.core.store;
  const find = store.find;
  store.find = function (
    this: unknown,
    schema: ClassSchema,
    spec: { where: QueryNode; order: OrderKey[] },
    ...rest
  ) {
    finds.push({ className: schema.className, where: spec.where, order: spec.order });
    return find.call(store, schema, spec as never, ...(rest as [never]));
  } as typeof store.find;
  restore = () => {
    store.find = find;
  };
}

let customerIds: string[] = [];

describe('POST /aggregate on large data', () => {
  beforeAll(async () => {
    t = await startService({ aggregate: { maxLookupMatches: 5, maxSortDocuments: 50 } });
    customerIds = await seed(
      'Customer',
      Array.from({ length: CUSTOMERS }, (_, i) => ({ name: `c${i}`, tier: i })),
    );
    await seed(
      'Order',
      Array.from({ length: ORDERS }, (_, i) => ({
        n: i,
        customer: `c${i % CUSTOMERS}`,
        ...(i === 0 ? { pair: ['c2', 'c1', 'nobody'] } : {}),
        ...(i === 1 ? { ref: { __type: 'Pointer', className: 'Customer', objectId: customerIds[7] } } : {}),
      })),
    );
    await seed('Crowd', [
      ...Array.from({ length: 6 }, (_, i) => ({ name: 'hot', i })),
      ...Array.from({ length: 5 }, (_, i) => ({ name: 'warm', i })),
    ]);
    await seed('Probe', [{ want: 'warm' }, { want: 'hot' }]);
  });
  afterAll(() => t.close());
  afterEach(() => {
    restore();
    finds = [];
  });

  it('$lookup reads the joined class once per page of documents, not once per document', async () => {
    recordFinds();
    const res = await aggregate('Order', [
      { $lookup: { from: 'Customer', localField: 'customer', foreignField: 'name', as: 'who' } },
      { $project: { n: 1, customer: 1, who: 1, _id: 0 } },
    ]);
    expect(res.status, res.text).toBe(200);
    const results = res.json.results as Array<{ n: number; customer: string; who: Row[] }>;
    expect(results).toHaveLength(ORDERS);
    for (const r of results) {
      expect(r.who.map((c) => c.name)).toEqual([r.customer]);
      expect(r.who[0]).toMatchObject({ tier: Number(r.customer.slice(1)), objectId: expect.any(String) });
    }
    // 250 documents, 100 per query.
    expect(finds.filter((f) => f.className === 'Customer')).toHaveLength(3);
  });

  it('$lookup joins every value of an array, pointers by objectId, and nothing for a missing value', async () => {
    const res = await aggregate('Order', [
      { $match: { n: { $lt: 3 } } },
      { $lookup: { from: 'Customer', localField: 'pair', foreignField: 'name', as: 'pairs' } },
      { $lookup: { from: 'Customer', localField: 'ref', foreignField: '_id', as: 'refs' } },
      { $sort: { n: 1 } },
    ]);
    expect(res.status, res.text).toBe(200);
    const names = (rows: Row[]) => rows.map((c) => c.name);
    const [zero, one, two] = res.json.results as Array<{ pairs: Row[]; refs: Row[] }>;
    // In objectId order, as a find of `name $in [...]` answers them.
    const byId = ['c1', 'c2'].sort((a, b) =>
      customerIds[Number(a.slice(1))]! < customerIds[Number(b.slice(1))]! ? -1 : 1,
    );
    expect(names(zero!.pairs)).toEqual(byId);
    expect(zero!.refs).toEqual([]);
    expect(one!.pairs).toEqual([]);
    expect(names(one!.refs)).toEqual(['c7']);
    expect(two!.pairs).toEqual([]);
    expect(two!.refs).toEqual([]);
  });

  it('$lookup reads the joined class as the master key does, as before: ACL, CLP and protectedFields do not apply', async () => {
    const schema = await t.request('POST', '/schemas/Secret', {
      as: 'master',
      body: {
        className: 'Secret',
        fields: { owner: { type: 'String' }, pin: { type: 'String' } },
        classLevelPermissions: {
          find: {},
          get: {},
          count: {},
          create: {},
          update: {},
          delete: {},
          addField: {},
          protectedFields: { '*': ['pin'] },
        },
      },
    });
    expect(schema.status, schema.text).toBe(200);
    const row = await t.request('POST', '/classes/Secret', {
      as: 'master',
      body: { owner: 'c4', pin: '1234', ACL: {} },
    });
    expect(row.status, row.text).toBe(201);
    const res = await aggregate('Order', [
      { $match: { n: 4 } },
      { $lookup: { from: 'Secret', localField: 'customer', foreignField: 'owner', as: 'secret' } },
      { $project: { secret: 1, _id: 0 } },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.json.results).toEqual([{ secret: [expect.objectContaining({ owner: 'c4', pin: '1234' })] }]);
  });

  it('a document joined to more rows than aggregate.maxLookupMatches is a 102 naming the option', async () => {
    const warm = await aggregate('Probe', [
      { $match: { want: 'warm' } },
      { $lookup: { from: 'Crowd', localField: 'want', foreignField: 'name', as: 'crowd' } },
    ]);
    expect(warm.status, warm.text).toBe(200);
    expect(warm.json.results[0].crowd.map((r: Row) => r.i).sort()).toEqual([0, 1, 2, 3, 4]);
    const hot = await aggregate('Probe', [
      { $lookup: { from: 'Crowd', localField: 'want', foreignField: 'name', as: 'crowd' } },
    ]);
    expect(hot.status).toBe(400);
    expect(hot.json).toEqual({
      code: 102,
      error:
        '$lookup from Crowd matched more than 5 rows for one document; the option aggregate.maxLookupMatches raises the bound.',
    });
  });

  it('a $sort after $match and $project stages runs in the store, over more documents than aggregate.maxSortDocuments', async () => {
    recordFinds();
    const res = await aggregate('Order', [
      { $match: { n: { $gte: 100 } } },
      { $project: { n: 1, c: '$customer', _id: 0 } },
      { $match: { c: { $in: ['c3', 'c4'] } } },
      { $sort: { c: 1, n: -1 } },
      { $skip: 1 },
      { $limit: 3 },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.json.results).toEqual([
      { n: 233, c: 'c3' },
      { n: 223, c: 'c3' },
      { n: 213, c: 'c3' },
    ]);
    // The renamed key is the class's `customer`: the store was asked for the order.
    const orders = finds.filter((f) => f.className === 'Order').map((f) => f.order);
    expect(orders[0]).toEqual([
      { path: ['customer'], descending: false },
      { path: ['n'], descending: true },
      { path: ['objectId'], descending: false },
    ]);
    const all = await aggregate('Order', [{ $project: { n: 1, _id: 0 } }, { $sort: { n: -1 } }]);
    expect(all.status, all.text).toBe(200);
    expect(all.json.results).toEqual(Array.from({ length: ORDERS }, (_, i) => ({ n: ORDERS - 1 - i })));
    // A key no document holds (dropped by the $project, or no field) orders nothing.
    finds = [];
    const dropped = await aggregate('Order', [
      { $project: { n: 1, _id: 0 } },
      { $sort: { customer: 1, nothing: 1, n: -1 } },
      { $limit: 2 },
    ]);
    expect(dropped.status, dropped.text).toBe(200);
    expect(dropped.json.results).toEqual([{ n: 249 }, { n: 248 }]);
    expect(finds.map((f) => f.order)).toEqual([
      [
        { path: ['n'], descending: true },
        { path: ['objectId'], descending: false },
      ],
    ]);
  });

  it('a $sort the store cannot run holds at most aggregate.maxSortDocuments documents: past them, a 102 naming the option', async () => {
    const small = await aggregate('Order', [
      { $match: { n: { $lt: 40 } } },
      { $group: { _id: '$n', customers: { $push: '$customer' } } },
      { $sort: { objectId: -1 } },
      { $limit: 2 },
    ]);
    expect(small.status, small.text).toBe(200);
    expect(small.json.results).toEqual([
      { objectId: 39, customers: ['c9'] },
      { objectId: 38, customers: ['c8'] },
    ]);
    for (const pipeline of [
      [{ $group: { _id: '$n', customers: { $push: '$customer' } } }, { $sort: { objectId: -1 } }],
      [
        { $lookup: { from: 'Customer', localField: 'customer', foreignField: 'name', as: 'who' } },
        { $sort: { n: 1 } },
      ],
      // The store reads no key below a String field.
      [{ $sort: { 'customer.x': 1 } }],
    ]) {
      const res = await aggregate('Order', pipeline);
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({
        code: 102,
        error:
          '$sort holds at most 50 documents in memory when the store cannot sort (after $group, $unwind or $lookup, or below a field that is no Object); $match fewer documents, sort earlier in the pipeline, or raise the option aggregate.maxSortDocuments.',
      });
    }
  });

  it('a streamed $match reads a dot path into an array as any element (here the rows $lookup joined)', async () => {
    const res = await aggregate('Order', [
      { $match: { n: { $lt: 20 } } },
      { $lookup: { from: 'Customer', localField: 'customer', foreignField: 'name', as: 'who' } },
      { $match: { 'who.tier': { $in: [1, 3] } } },
      { $project: { n: 1, _id: 0 } },
      { $sort: { n: 1 } },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.json.results).toEqual([{ n: 1 }, { n: 3 }, { n: 11 }, { n: 13 }]);
    const none = await aggregate('Order', [
      { $match: { n: { $lt: 20 } } },
      { $lookup: { from: 'Customer', localField: 'customer', foreignField: 'name', as: 'who' } },
      { $match: { 'who.tier': { $ne: 0 }, 'who.name': { $exists: true } } },
      { $count: 'n' },
    ]);
    expect(none.json.results).toEqual([{ n: 18 }]);
  });
});

describe('$lookup pages whose joined rows pass a page of the store', () => {
  let big: TestService;
  beforeAll(async () => {
    big = await startService({ aggregate: { maxLookupMatches: 1000 } });
    t = big;
    await seed('Pile', [
      ...Array.from({ length: 600 }, (_, i) => ({ name: 'a', i })),
      ...Array.from({ length: 600 }, (_, i) => ({ name: 'b', i })),
    ]);
    await seed('Want', [{ want: 'a' }, { want: 'b' }]);
  }, 120_000);
  afterAll(() => big.close());
  afterEach(() => {
    restore();
    finds = [];
  });

  it('are split until each query reads at most 1,000 rows (or the bound): the answer is whole', async () => {
    recordFinds();
    const res = await aggregate('Want', [
      { $lookup: { from: 'Pile', localField: 'want', foreignField: 'name', as: 'pile' } },
      { $unwind: '$pile' },
      { $group: { _id: '$want', n: { $sum: 1 }, names: { $addToSet: '$pile.name' } } },
      { $sort: { objectId: 1 } },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.json.results).toEqual([
      { objectId: 'a', n: 600, names: ['a'] },
      { objectId: 'b', n: 600, names: ['b'] },
    ]);
    // Both documents in one query (1,200 rows: over), then one query each (in objectId order).
    const asked = finds
      .filter((f) => f.className === 'Pile')
      .map((f) => (f.where as { values: string[] }).values);
    expect(asked).toHaveLength(3);
    expect([...asked[0]!].sort()).toEqual(['a', 'b']);
    expect([asked[1], asked[2]]).toEqual([[asked[0]![0]], [asked[0]![1]]]);
    expect(
      finds.every((f) => f.className !== 'Pile' || (f.where.type === 'in' && f.where.path[0] === 'name')),
    ).toBe(true);
  });
});
