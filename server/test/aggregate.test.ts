import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';
import { startService, type TestService } from './helpers/service.ts';

const SALES = [
  {
    item: 'apple',
    category: 'fruit',
    price: 3,
    qty: 10,
    tags: ['red', 'sweet'],
    sold: '2026-01-02T00:00:00.000Z',
    meta: { size: 1 },
  },
  { item: 'pear', category: 'fruit', price: 4, qty: 5, tags: ['green'], sold: '2026-01-05T00:00:00.000Z' },
  {
    item: 'kale',
    category: 'veg',
    price: 2,
    qty: 7,
    tags: [],
    sold: '2026-01-03T00:00:00.000Z',
    meta: { size: 1 },
  },
  {
    item: 'leek',
    category: 'veg',
    price: 5,
    qty: 1,
    tags: ['green', 'long'],
    sold: '2026-01-01T00:00:00.000Z',
  },
  { item: 'fig', category: 'fruit', price: 9, qty: 2, sold: '2026-01-04T00:00:00.000Z' },
];

let t: TestService;
const aggregate = (pipeline: unknown, className = 'Sale') =>
  t.request('POST', `/aggregate/${className}`, { as: 'master', body: { pipeline } });

describe('POST /aggregate', () => {
  beforeAll(async () => {
    t = await startService();
    for (const s of SALES) {
      const res = await t.request('POST', '/classes/Sale', {
        as: 'master',
        body: { ...s, sold: { __type: 'Date', iso: s.sold }, ACL: {} },
      });
      expect(res.status).toBe(201);
    }
    await t.request('POST', '/classes/Category', { as: 'master', body: { name: 'fruit', aisle: 1 } });
    await t.request('POST', '/classes/Category', { as: 'master', body: { name: 'veg', aisle: 2 } });
  });
  afterAll(() => t.close());

  it('$group in SQL: by a field with $sum, $avg, $min, $max, $count; _id comes back as objectId', async () => {
    const res = await aggregate([
      { $match: { price: { $gte: 2 } } },
      {
        $group: {
          _id: '$category',
          total: { $sum: '$qty' },
          rows: { $sum: 1 },
          avgPrice: { $avg: '$price' },
          cheapest: { $min: '$price' },
          latest: { $max: '$sold' },
          n: { $count: {} },
        },
      },
      { $sort: { objectId: 1 } },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.json.results).toEqual([
      {
        objectId: 'fruit',
        total: 17,
        rows: 3,
        avgPrice: 16 / 3,
        cheapest: 3,
        latest: { __type: 'Date', iso: '2026-01-05T00:00:00.000Z' },
        n: 3,
      },
      {
        objectId: 'veg',
        total: 8,
        rows: 2,
        avgPrice: 3.5,
        cheapest: 2,
        latest: { __type: 'Date', iso: '2026-01-03T00:00:00.000Z' },
        n: 2,
      },
    ]);
  });

  it('$group by null and by several fields; streaming accumulators $first, $last, $push, $addToSet', async () => {
    const all = await aggregate([{ $group: { _id: null, qty: { $sum: '$qty' } } }]);
    expect(all.json.results).toEqual([{ objectId: null, qty: 25 }]);
    const none = await aggregate([
      { $match: { price: 1000 } },
      { $group: { _id: null, qty: { $sum: '$qty' } } },
    ]);
    expect(none.json.results).toEqual([]);
    const pairs = await aggregate([
      { $match: { category: 'fruit' } },
      { $group: { _id: { c: '$category', cheap: '$price' }, n: { $sum: 1 } } },
      { $sort: { 'objectId.cheap': 1 } },
    ]);
    expect(pairs.json.results.map((r: { objectId: unknown }) => r.objectId)).toEqual([
      { c: 'fruit', cheap: 3 },
      { c: 'fruit', cheap: 4 },
      { c: 'fruit', cheap: 9 },
    ]);
    const streamed = await aggregate([
      { $sort: { sold: 1 } },
      {
        $group: {
          _id: '$category',
          first: { $first: '$item' },
          last: { $last: '$item' },
          items: { $push: '$item' },
          cats: { $addToSet: '$category' },
        },
      },
      { $sort: { objectId: -1 } },
    ]);
    expect(streamed.json.results).toEqual([
      { objectId: 'veg', first: 'leek', last: 'kale', items: ['leek', 'kale'], cats: ['veg'] },
      { objectId: 'fruit', first: 'apple', last: 'pear', items: ['apple', 'fig', 'pear'], cats: ['fruit'] },
    ]);
  });

  it('$project, $sort, $skip, $limit, $count, $unwind and a $match after them', async () => {
    const page = await aggregate([
      { $sort: { price: -1 } },
      { $skip: 1 },
      { $limit: 2 },
      { $project: { item: 1, _id: 0 } },
    ]);
    expect(page.json.results).toEqual([{ item: 'leek' }, { item: 'pear' }]);
    const renamed = await aggregate([
      { $match: { item: 'kale' } },
      { $project: { name: '$item', cost: '$price' } },
    ]);
    expect(renamed.json.results).toEqual([{ objectId: expect.any(String), name: 'kale', cost: 2 }]);
    const count = await aggregate([{ $match: { category: 'veg' } }, { $count: 'vegetables' }]);
    expect(count.json.results).toEqual([{ vegetables: 2 }]);
    const tags = await aggregate([
      { $unwind: '$tags' },
      { $group: { _id: '$tags', n: { $sum: 1 } } },
      { $match: { n: { $gte: 2 } } },
    ]);
    expect(tags.json.results).toEqual([{ objectId: 'green', n: 2 }]);
    const kept = await aggregate([
      { $match: { category: 'veg' } },
      { $unwind: { path: '$tags', preserveNullAndEmptyArrays: true, includeArrayIndex: 'i' } },
      { $project: { item: 1, tags: 1, i: 1, _id: 0 } },
      { $sort: { item: 1, i: 1 } },
    ]);
    expect(kept.json.results).toEqual([
      { item: 'kale', i: null },
      { item: 'leek', tags: 'green', i: 0 },
      { item: 'leek', tags: 'long', i: 1 },
    ]);
  });

  it('$lookup joins another class; the master key bypasses ACLs (the rows have an empty ACL)', async () => {
    const res = await aggregate([
      { $match: { item: 'kale' } },
      { $lookup: { from: 'Category', localField: 'category', foreignField: 'name', as: 'cat' } },
      { $project: { item: 1, cat: 1, _id: 0 } },
    ]);
    expect(res.json.results).toHaveLength(1);
    expect(res.json.results[0].cat).toMatchObject([{ name: 'veg', aisle: 2 }]);
  });

  it('a $match after $unwind or $group takes the full where language: $regex, $exists, $all, dates, dot paths', async () => {
    const names = (res: { json: { results: Array<{ item?: string }> } }) =>
      res.json.results.map((r) => r.item);
    const regex = await aggregate([
      { $unwind: '$tags' },
      { $match: { tags: { $regex: '^GR', $options: 'i' } } },
      { $sort: { item: 1 } },
    ]);
    expect(regex.status, regex.text).toBe(200);
    expect(names(regex)).toEqual(['leek', 'pear']);
    const missing = await aggregate([
      { $unwind: { path: '$tags', preserveNullAndEmptyArrays: true } },
      { $match: { tags: { $exists: false } } },
      { $sort: { item: 1 } },
    ]);
    expect(names(missing)).toEqual(['fig', 'kale']);
    const present = await aggregate([
      { $unwind: '$tags' },
      { $match: { tags: { $exists: true, $nin: ['green', 'red'] } } },
      { $sort: { item: 1 } },
    ]);
    expect(present.json.results.map((r: { tags: string }) => r.tags)).toEqual(['sweet', 'long']);
    // $push makes the $group stream; its arrays, dates and keys are then matched in memory.
    const grouped = (match: unknown) =>
      aggregate([
        {
          $group: {
            _id: { c: '$category', cheap: '$price' },
            items: { $push: '$item' },
            sold: { $max: '$sold' },
            n: { $sum: 1 },
          },
        },
        { $match: match },
        { $sort: { 'objectId.cheap': 1 } },
      ]);
    const keys = (res: { json: { results: Array<{ objectId: unknown }> } }) =>
      res.json.results.map((r) => r.objectId);
    expect(keys(await grouped({ '_id.c': 'veg', 'objectId.cheap': { $gt: 2 } }))).toEqual([
      { c: 'veg', cheap: 5 },
    ]);
    expect(keys(await grouped({ items: { $all: ['pear'] }, n: 1 }))).toEqual([{ c: 'fruit', cheap: 4 }]);
    expect(
      keys(await grouped({ sold: { $gte: { __type: 'Date', iso: '2026-01-04T00:00:00.000Z' } } })),
    ).toEqual([
      { c: 'fruit', cheap: 4 },
      { c: 'fruit', cheap: 9 },
    ]);
    const all = await aggregate([
      { $group: { _id: '$category', tags: { $push: '$tags' }, items: { $addToSet: '$item' } } },
      { $match: { items: { $all: ['apple', 'fig'] } } },
    ]);
    expect(all.json.results).toEqual([
      {
        objectId: 'fruit',
        tags: expect.arrayContaining([['red', 'sweet'], ['green']]),
        items: expect.arrayContaining(['apple', 'pear', 'fig']),
      },
    ]);
    // A date held as an ISO string (createdAt, renamed) compares as a date with a Date operand.
    const renamed = await aggregate([
      { $project: { item: 1, when: '$createdAt', _id: 0 } },
      { $match: { when: { $lte: { __type: 'Date', iso: '2999-01-01T00:00:00.000Z' } }, item: 'fig' } },
    ]);
    expect(renamed.json.results).toEqual([{ item: 'fig', when: expect.any(String) }]);
    // An Object key reached by a dot path, and $or/$nor, after $project.
    const nested = await aggregate([
      { $project: { item: 1, info: '$meta', _id: 0 } },
      { $match: { $or: [{ 'info.size': { $gte: 2 } }, { item: 'kale' }], $nor: [{ item: 'fig' }] } },
      { $sort: { item: 1 } },
    ]);
    expect(nested.status, nested.text).toBe(200);
    expect(names(nested)).toEqual(['kale']);
  });

  it('a streamed $match answers the same 102 as a class query for a where its values do not allow', async () => {
    const res = await aggregate([
      { $group: { _id: '$category', n: { $sum: 1 }, items: { $push: '$item' } } },
      { $match: { n: { $regex: '^1' } } },
    ]);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 102,
      error: 'Invalid where: $regex needs a String field, n is Number.',
    });
  });

  it('bypasses CLP and protectedFields, not only the ACL (master only route)', async () => {
    await t.request('POST', '/schemas/Vault', {
      as: 'master',
      body: {
        className: 'Vault',
        fields: { label: { type: 'String' }, pin: { type: 'String' } },
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
    const made = await t.request('POST', '/classes/Vault', {
      as: 'master',
      body: { label: 'a', pin: '1234', ACL: {} },
    });
    expect(made.status, made.text).toBe(201);
    const refused = await t.request('GET', '/classes/Vault', { as: 'rest' });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 119, error: 'Permission denied for action find on class Vault.' });
    const res = await aggregate(
      [
        { $match: { pin: '1234' } },
        { $project: { label: 1, pin: 1, _id: 0 } },
        { $match: { pin: { $regex: '^12' } } },
      ],
      'Vault',
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json.results).toEqual([{ label: 'a', pin: '1234' }]);
    const grouped = await aggregate([{ $group: { _id: '$pin', n: { $sum: 1 } } }], 'Vault');
    expect(grouped.json.results).toEqual([{ objectId: '1234', n: 1 }]);
    const denied = await t.request('POST', '/aggregate/Vault', {
      as: 'rest',
      body: { pipeline: [{ $match: {} }] },
    });
    expect(denied.status).toBe(403);
    expect(denied.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
  });

  it('streams a large class in pages without a limit', async () => {
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      method: 'POST',
      path: '/classes/Big',
      body: { n: i, odd: i % 2 === 1 },
    }));
    for (let i = 0; i < rows.length; i += 100) {
      const res = await t.request('POST', '/batch', {
        as: 'master',
        body: { requests: rows.slice(i, i + 100) },
      });
      expect(res.status).toBe(200);
    }
    const res = await aggregate(
      [{ $project: { n: 1, _id: 0 } }, { $match: { n: { $gte: 1500 } } }, { $count: 'n' }],
      'Big',
    );
    expect(res.json.results).toEqual([{ n: 1000 }]);
    const skipped = await aggregate([{ $skip: 2499 }, { $project: { n: 1, _id: 0 } }], 'Big');
    expect(skipped.json.results).toHaveLength(1);
    // 2,500 writes through the API (each with its row version): past the default 20 s on a loaded PostgreSQL.
  }, 60_000);
});

runScenarios('POST /aggregate errors', [
  {
    name: 'master only',
    method: 'POST',
    path: '/aggregate/Sale',
    body: { pipeline: [] },
    status: 403,
    code: 119,
    expect: { error: 'unauthorized: master key is required' },
  },
  {
    name: 'an unknown stage is 102 naming the stage',
    method: 'POST',
    path: '/aggregate/Sale',
    as: 'master',
    body: { pipeline: [{ $match: {} }, { $bucketAuto: {} }] },
    status: 400,
    code: 102,
    expect: { error: "Invalid aggregate stage '$bucketAuto'." },
  },
  {
    name: 'an unknown accumulator is 102',
    method: 'POST',
    path: '/aggregate/Sale',
    as: 'master',
    body: { pipeline: [{ $group: { _id: null, x: { $median: '$a' } } }] },
    status: 400,
    code: 102,
    expect: { error: "Invalid $group accumulator '$median' for x." },
  },
  {
    name: 'a missing pipeline is 102',
    method: 'POST',
    path: '/aggregate/Sale',
    as: 'master',
    body: {},
    status: 400,
    code: 102,
    expect: { error: 'pipeline must be an array of stages, as in {"pipeline": [...]}.' },
  },
  {
    name: '$vectorSearch must come first',
    method: 'POST',
    path: '/aggregate/Sale',
    as: 'master',
    body: { pipeline: [{ $match: {} }, { $vectorSearch: { queryVector: [1], path: 'v', limit: 1 } }] },
    status: 400,
    code: 102,
    expect: { error: '$vectorSearch must be the first stage of the pipeline.' },
  },
  {
    name: 'GET with a pipeline parameter',
    method: 'GET',
    path: '/aggregate/Nothing',
    as: 'master',
    query: { pipeline: JSON.stringify([{ $count: 'n' }]) },
    status: 200,
    expect: { results: [] },
  },
]);
