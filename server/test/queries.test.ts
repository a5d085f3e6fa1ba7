import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';
import { type Credential, startService, type TestService } from './helpers/service.ts';

async function seed(t: TestService, className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`seed ${className} failed: ${res.status} ${res.text}`);
  return res.json.objectId as string;
}

const ptr = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });
const date = (iso: string) => ({ __type: 'Date', iso });

type Rows = Array<Record<string, unknown>>;
const labels = (results: Rows) => results.map((r) => r.label as string);

/**
 * A find on class Q; `expected` lists the labels of the rows it must return (sorted unless
 * `ordered`). Query values may use `{var}` placeholders from the setup.
 */
function find(
  name: string,
  where: unknown,
  expected: string[],
  extra: { ordered?: boolean; query?: Record<string, unknown>; as?: Credential } = {},
): Scenario {
  return {
    name,
    method: 'GET',
    path: '/classes/Q',
    as: extra.as,
    query: { ...(where === undefined ? {} : { where: JSON.stringify(where) }), ...extra.query },
    status: 200,
    after: async (_ctx, res) => {
      const got = labels(res.json.results);
      if (extra.ordered) expect(got).toEqual(expected);
      else expect(got.sort()).toEqual([...expected].sort());
    },
  };
}

/** A find that must fail with 102 and a text containing `text`. */
function bad(
  name: string,
  query: Record<string, unknown>,
  text: string,
  as?: Credential,
  code = 102,
): Scenario {
  return {
    name,
    method: 'GET',
    path: '/classes/Q',
    as,
    query: Object.fromEntries(
      Object.entries(query).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ),
    status: 400,
    code,
    errorContains: text,
  };
}

const ALL = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];

const whereScenarios: Scenario[] = [
  find('no where returns every readable row', undefined, ALL),
  find('empty where returns every readable row', {}, ALL),
  // Equality and comparisons.
  find('equality on a String', { name: 'alpha' }, ['r1']),
  find('equality on a Number', { n: 2 }, ['r2']),
  find('equality on a Boolean (true)', { flag: true }, ['r1']),
  find('equality on a Boolean (false)', { flag: false }, ['r2']),
  find('equality with null matches rows without the field', { name: null }, ['r6']),
  find('$eq', { n: { $eq: 3 } }, ['r3']),
  find('$ne includes rows without the field', { name: { $ne: 'alpha' } }, ['r2', 'r3', 'r4', 'r5', 'r6']),
  find('$ne null is "exists"', { name: { $ne: null } }, ['r1', 'r2', 'r3', 'r4', 'r5']),
  find('$lt', { n: { $lt: 3 } }, ['r1', 'r2']),
  find('$lte', { n: { $lte: 3 } }, ['r1', 'r2', 'r3']),
  find('$gt', { n: { $gt: 4 } }, ['r5', 'r6']),
  find('$gte', { n: { $gte: 4 } }, ['r4', 'r5', 'r6']),
  find('a range: $gt and $lt on one key', { n: { $gt: 1, $lt: 4 } }, ['r2', 'r3']),
  find('$lt on strings compares text', { name: { $lt: 'c' } }, ['r1', 'r2', 'r4']),
  find('$in', { n: { $in: [1, 3, 99] } }, ['r1', 'r3']),
  find('$in with null also matches rows without the field', { name: { $in: ['alpha', null] } }, ['r1', 'r6']),
  find('$nin includes rows without the field', { name: { $nin: ['alpha', 'beta'] } }, [
    'r3',
    'r4',
    'r5',
    'r6',
  ]),
  find('$in with an empty list matches nothing', { n: { $in: [] } }, []),
  find('$nin with an empty list matches everything', { n: { $nin: [] } }, ALL),
  find('$exists true', { obj: { $exists: true } }, ['r1', 'r2', 'r3']),
  find('$exists false', { name: { $exists: false } }, ['r6']),
  find('$exists on a field the class does not have', { nothing: { $exists: true } }, []),
  find('equality on a field the class does not have matches nothing', { nothing: 'x' }, []),
  find('$ne on a field the class does not have matches everything', { nothing: { $ne: 'x' } }, ALL),
  // Dates.
  find('equality on a Date', { when: date('2024-02-01T00:00:00.000Z') }, ['r2']),
  find(
    'a date range with $gte and $lt',
    { when: { $gte: date('2024-02-01T00:00:00.000Z'), $lt: date('2024-04-01T00:00:00.000Z') } },
    ['r2', 'r3'],
  ),
  find('a Date with another offset is the same instant', { when: date('2024-01-01T02:00:00+02:00') }, ['r1']),
  find('$in on dates', { when: { $in: [date('2024-01-01T00:00:00Z'), date('2024-03-01T00:00:00Z')] } }, [
    'r1',
    'r3',
  ]),
  find('createdAt comparisons work', { createdAt: { $lte: date('2999-01-01T00:00:00.000Z') } }, ALL),
  find(
    'updatedAt $gt far future matches nothing',
    { updatedAt: { $gt: date('2999-01-01T00:00:00.000Z') } },
    [],
  ),
  find('objectId equality', { objectId: '{r2}' }, ['r2']),
  find('objectId $in', { objectId: { $in: ['{r2}', '{r4}'] } }, ['r2', 'r4']),
  find(
    'equality on a File compares by name',
    { file: { __type: 'File', name: '00000000000000000000000000000000_a.txt' } },
    ['r1'],
  ),
  find(
    'File $in',
    {
      file: {
        $in: [{ __type: 'File', name: '00000000000000000000000000000000_b.txt', url: 'http://f/b.txt' }],
      },
    },
    ['r2'],
  ),
  find('File $ne', { file: { $ne: { __type: 'File', name: '00000000000000000000000000000000_a.txt' } } }, [
    'r2',
    'r3',
    'r4',
    'r5',
    'r6',
  ]),
  find('equality on Bytes', { bytes: { __type: 'Bytes', base64: 'AQI=' } }, ['r1']),
  // Nested object keys.
  find('nested key equality ("obj.c")', { 'obj.c': 'x' }, ['r1']),
  find('two levels deep ("obj.a.b") with $gt', { 'obj.a.b': { $gt: 1 } }, ['r2', 'r3']),
  find('nested key $exists', { 'obj.c': { $exists: true } }, ['r1', 'r2']),
  find('nested key $in', { 'obj.a.b': { $in: [1, 3] } }, ['r1', 'r3']),
  find('nested date inside an object', { 'obj.seen': { $gte: date('2024-06-01T00:00:00.000Z') } }, ['r2']),
  find('whole-object equality', { obj: { a: { b: 3 } } }, ['r3']),
  // Arrays.
  find('array-contains equality', { tags: 'b' }, ['r1', 'r2']),
  find('array $in matches any element', { tags: { $in: ['a', 'c'] } }, ['r1', 'r2', 'r3']),
  find('array $nin', { tags: { $nin: ['b'] } }, ['r3', 'r4', 'r5', 'r6']),
  find('$all', { tags: { $all: ['b', 'c'] } }, ['r2']),
  find('$all with one value', { tags: { $all: ['c'] } }, ['r2', 'r3']),
  find('$containedBy', { tags: { $containedBy: ['a', 'b', 'c'] }, n: { $lte: 4 } }, ['r1', 'r2', 'r3', 'r4']),
  find('$containedBy a smaller set', { tags: { $containedBy: ['b', 'c'] }, n: { $lte: 4 } }, [
    'r2',
    'r3',
    'r4',
  ]),
  find('array equality with a whole array', { tags: ['b', 'c'] }, ['r2']),
  find('numbers in arrays', { scores: 7 }, ['r1', 'r3']),
  find('$gt on an array matches when any element does', { scores: { $gt: 8 } }, ['r3']),
  // Pointers.
  find('pointer equality', { owner: ptr('Person', '{ann}') }, ['r1', 'r3']),
  find('pointer $ne includes rows without the pointer', { owner: { $ne: ptr('Person', '{ann}') } }, [
    'r2',
    'r4',
    'r5',
    'r6',
  ]),
  find('pointer $in', { owner: { $in: [ptr('Person', '{bob}'), ptr('Person', '{cy}')] } }, ['r2', 'r4']),
  find('pointer to another class never matches', { owner: ptr('Other', '{ann}') }, []),
  find('array of pointers contains a pointer', { refs: ptr('Person', '{bob}') }, ['r1', 'r2']),
  find('array of pointers $all', { refs: { $all: [ptr('Person', '{ann}'), ptr('Person', '{bob}')] } }, [
    'r1',
  ]),
  find('pointer $exists false', { owner: { $exists: false } }, ['r5', 'r6']),
  // $regex.
  find('$regex', { name: { $regex: '^al' } }, ['r1']),
  find('$regex is case-sensitive by default', { name: { $regex: '^d' } }, []),
  find('$regex with $options i', { name: { $regex: '^d', $options: 'i' } }, ['r4']),
  find('$regex with $options m: ^ matches after a newline', { name: { $regex: '^line2', $options: 'm' } }, [
    'r5',
  ]),
  find('$regex without m: ^ only at the start', { name: { $regex: '^line2' } }, []),
  find('$regex with $options s: . matches a newline', { name: { $regex: 'epsilon.line2', $options: 's' } }, [
    'r5',
  ]),
  find('$regex without s: . does not match a newline', { name: { $regex: 'epsilon.line2' } }, []),
  find(
    '$regex with $options x: whitespace and comments ignored',
    { name: { $regex: '^ al  pha $ # the first row', $options: 'x' } },
    ['r1'],
  ),
  find('$regex with several options', { name: { $regex: '^LINE2$', $options: 'im' } }, ['r5']),
  find('$regex on a nested key', { 'obj.c': { $regex: '^[xy]$' } }, ['r1', 'r2']),
  find('$regex never matches rows without the field', { name: { $regex: '.*' } }, [
    'r1',
    'r2',
    'r3',
    'r4',
    'r5',
  ]),
  find('$regex special characters are a regex, not SQL LIKE', { name: { $regex: 'a%' } }, []),
  // Logic.
  find('$or', { $or: [{ n: 1 }, { name: 'gamma' }] }, ['r1', 'r3']),
  find('$and', { $and: [{ n: { $gt: 1 } }, { n: { $lt: 4 } }] }, ['r2', 'r3']),
  find('$nor', { $nor: [{ n: 1 }, { n: { $gt: 3 } }] }, ['r2', 'r3']),
  find('nested $or inside $and', { $and: [{ $or: [{ n: 1 }, { n: 2 }] }, { flag: true }] }, ['r1']),
  find('$or with a field condition beside it', { $or: [{ n: 1 }, { n: 5 }], tags: 'a' }, ['r1']),
  // Subqueries (a hidden Person, cy, is visible only to the master key).
  find('$inQuery', { owner: { $inQuery: { className: 'Person', where: { age: { $gt: 25 } } } } }, [
    'r1',
    'r3',
  ]),
  find(
    '$inQuery respects the ACL of the inner class',
    { owner: { $inQuery: { className: 'Person', where: { name: 'cy' } } } },
    [],
  ),
  find(
    '$inQuery with the master key sees the hidden row',
    { owner: { $inQuery: { className: 'Person', where: { name: 'cy' } } } },
    ['r4'],
    { as: 'master' },
  ),
  find(
    '$notInQuery (rows without the pointer included)',
    { owner: { $notInQuery: { className: 'Person', where: { age: { $gt: 25 } } } } },
    ['r2', 'r4', 'r5', 'r6'],
  ),
  find(
    '$inQuery on an array of pointers',
    { refs: { $inQuery: { className: 'Person', where: { name: 'bob' } } } },
    ['r1', 'r2'],
  ),
  find(
    '$inQuery on a class that does not exist matches nothing',
    { owner: { $inQuery: { className: 'Nope', where: {} } } },
    [],
  ),
  find(
    '$select',
    { city: { $select: { query: { className: 'Person', where: { age: { $gt: 25 } } }, key: 'city' } } },
    ['r1'],
  ),
  find(
    '$select with the master key sees the hidden row',
    { city: { $select: { query: { className: 'Person', where: { age: { $gt: 25 } } }, key: 'city' } } },
    ['r1', 'r3'],
    { as: 'master' },
  ),
  find(
    '$dontSelect (the selected key may be missing on some inner rows)',
    { city: { $dontSelect: { query: { className: 'Person', where: {} }, key: 'city' } } },
    ['r3', 'r4', 'r5', 'r6'],
  ),
  find(
    '$dontSelect with an inner where',
    { city: { $dontSelect: { query: { className: 'Person', where: { name: 'bob' } }, key: 'city' } } },
    ['r1', 'r3', 'r4', 'r5', 'r6'],
  ),
  find(
    'nested subqueries: $inQuery inside $inQuery',
    {
      owner: {
        $inQuery: {
          className: 'Person',
          where: { club: { $inQuery: { className: 'Club', where: { name: 'chess' } } } },
        },
      },
    },
    ['r2'],
  ),
  find('$relatedTo', { $relatedTo: { object: ptr('Group', '{g1}'), key: 'members' } }, ['r1', 'r3']),
  find(
    '$relatedTo with another condition',
    { $relatedTo: { object: ptr('Group', '{g1}'), key: 'members' }, n: { $gt: 1 } },
    ['r3'],
  ),
  find(
    '$relatedTo of an owner without members',
    { $relatedTo: { object: ptr('Group', '{g2}'), key: 'members' } },
    [],
  ),
  find(
    '$relatedTo on an unknown key matches nothing',
    { $relatedTo: { object: ptr('Group', '{g1}'), key: 'nope' } },
    [],
  ),
];

runScenarios('queries: where', whereScenarios, { setup: setupQ });

async function setupQ(ctx: { t: TestService; vars: Record<string, string> }): Promise<void> {
  const t = ctx.t;
  const v = ctx.vars;
  v.chess = await seed(t, 'Club', { name: 'chess' });
  v.ann = await seed(t, 'Person', { name: 'ann', age: 30, city: 'Oslo' });
  v.bob = await seed(t, 'Person', { name: 'bob', age: 20, city: 'Rome', club: ptr('Club', v.chess) });
  v.cy = await seed(t, 'Person', { name: 'cy', age: 40, city: 'Paris', ACL: {} });
  v.dee = await seed(t, 'Person', { name: 'dee', age: 10 });
  v.r1 = await seed(t, 'Q', {
    label: 'r1',
    name: 'alpha',
    n: 1,
    grp: 1,
    flag: true,
    tags: ['a', 'b'],
    scores: [7, 1],
    obj: { a: { b: 1 }, c: 'x' },
    when: date('2024-01-01T00:00:00.000Z'),
    owner: ptr('Person', v.ann),
    refs: [ptr('Person', v.ann), ptr('Person', v.bob)],
    city: 'Oslo',
    file: { __type: 'File', name: '00000000000000000000000000000000_a.txt', url: 'http://f/a.txt' },
    bytes: { __type: 'Bytes', base64: 'AQI=' },
  });
  v.r2 = await seed(t, 'Q', {
    label: 'r2',
    name: 'beta',
    n: 2,
    grp: 1,
    flag: false,
    tags: ['b', 'c'],
    scores: [2],
    obj: { a: { b: 2 }, c: 'y', seen: date('2024-07-01T00:00:00.000Z') },
    when: date('2024-02-01T00:00:00.000Z'),
    owner: ptr('Person', v.bob),
    refs: [ptr('Person', v.bob)],
    city: 'Rome',
    file: { __type: 'File', name: '00000000000000000000000000000000_b.txt', url: 'http://f/b.txt' },
    bytes: { __type: 'Bytes', base64: 'AAA=' },
  });
  v.r3 = await seed(t, 'Q', {
    label: 'r3',
    name: 'gamma',
    n: 3,
    grp: 2,
    tags: ['c'],
    scores: [9, 7],
    obj: { a: { b: 3 } },
    when: date('2024-03-01T00:00:00.000Z'),
    owner: ptr('Person', v.ann),
    city: 'Paris',
  });
  v.r4 = await seed(t, 'Q', {
    label: 'r4',
    name: 'Delta',
    n: 4,
    grp: 2,
    tags: [],
    when: date('2024-04-01T00:00:00.000Z'),
    owner: ptr('Person', v.cy),
  });
  v.r5 = await seed(t, 'Q', { label: 'r5', name: 'epsilon\nline2', n: 5, grp: 3 });
  v.r6 = await seed(t, 'Q', { label: 'r6', n: 6, grp: 3 });
  // A row nobody but the master key sees: it must never show up in the tables above.
  v.hiddenQ = await seed(t, 'Q', { label: 'hidden', name: 'alpha', n: 1, grp: 1, tags: ['a', 'b'], ACL: {} });
  v.g1 = await seed(t, 'Group', {
    name: 'g1',
    members: { __op: 'AddRelation', objects: [ptr('Q', v.r1), ptr('Q', v.r3), ptr('Q', v.hiddenQ)] },
  });
  v.g2 = await seed(t, 'Group', { name: 'g2', members: { __op: 'AddRelation', objects: [ptr('Q', v.r2)] } });
  await t.request('PUT', `/classes/Group/${v.g2}`, {
    as: 'master',
    body: { members: { __op: 'RemoveRelation', objects: [ptr('Q', v.r2)] } },
  });
}

// ---------------------------------------------------------------------------------------------
// order, limit, skip, keys, excludeKeys, count.
// ---------------------------------------------------------------------------------------------

const shapeScenarios: Scenario[] = [
  find('order ascending', {}, ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'], { ordered: true, query: { order: 'n' } }),
  find('order descending', {}, ['r6', 'r5', 'r4', 'r3', 'r2', 'r1'], {
    ordered: true,
    query: { order: '-n' },
  }),
  find('order by several keys', {}, ['r2', 'r1', 'r4', 'r3', 'r6', 'r5'], {
    ordered: true,
    query: { order: 'grp,-n' },
  }),
  find('order by several keys, first descending', {}, ['r5', 'r6', 'r3', 'r4', 'r1', 'r2'], {
    ordered: true,
    query: { order: '-grp,n' },
  }),
  find('order by a date', {}, ['r4', 'r3', 'r2', 'r1'], {
    ordered: true,
    query: { order: '-when', where: JSON.stringify({ when: { $exists: true } }) },
  }),
  find('order by a nested key', {}, ['r3', 'r2', 'r1'], {
    ordered: true,
    query: { order: '-obj.a.b', where: JSON.stringify({ obj: { $exists: true } }) },
  }),
  find('order by createdAt', {}, ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'], {
    ordered: true,
    query: { order: 'createdAt' },
  }),
  find('limit', {}, ['r1', 'r2'], { ordered: true, query: { order: 'n', limit: '2' } }),
  find('skip', {}, ['r5', 'r6'], { ordered: true, query: { order: 'n', skip: '4' } }),
  find('limit and skip', {}, ['r2', 'r3'], { ordered: true, query: { order: 'n', limit: '2', skip: '1' } }),
  find('skip past the end', {}, [], { query: { skip: '100' } }),
  find('limit=0 returns no rows', {}, [], { query: { limit: '0' } }),
  {
    name: 'count=1 answers the number of matching rows with the results',
    method: 'GET',
    path: '/classes/Q',
    query: { where: JSON.stringify({ n: { $gt: 2 } }), count: '1', limit: '1', order: 'n' },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.count).toBe(4);
      expect(labels(res.json.results)).toEqual(['r3']);
    },
  },
  {
    name: 'count=1 with limit=0 answers only the count',
    method: 'GET',
    path: '/classes/Q',
    query: { count: '1', limit: '0' },
    status: 200,
    expect: { results: [], count: 6 },
  },
  {
    name: 'count=1 with skip still counts every match',
    method: 'GET',
    path: '/classes/Q',
    query: { count: '1', skip: '5' },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.count).toBe(6);
      expect(res.json.results).toHaveLength(1);
    },
  },
  {
    name: 'count=1 on a class that does not exist is 0',
    method: 'GET',
    path: '/classes/NoSuchClass',
    query: { count: '1' },
    status: 200,
    expect: { results: [], count: 0 },
  },
  {
    name: 'count=1 with the master key counts hidden rows too',
    method: 'GET',
    path: '/classes/Q',
    as: 'master',
    query: { count: '1', limit: '0' },
    status: 200,
    expect: { results: [], count: 7 },
  },
  {
    name: 'keys narrows every result (built-ins always there)',
    method: 'GET',
    path: '/classes/Q',
    query: { keys: 'label,n', order: 'n', limit: '1' },
    status: 200,
    after: async (_ctx, res) => {
      expect(Object.keys(res.json.results[0]).sort()).toEqual([
        'createdAt',
        'label',
        'n',
        'objectId',
        'updatedAt',
      ]);
    },
  },
  {
    name: 'keys with dot paths keeps only those sub-keys',
    method: 'GET',
    path: '/classes/Q',
    query: { keys: 'label,obj.a.b', where: JSON.stringify({ n: 2 }) },
    status: 200,
    after: async (_ctx, res) => {
      const row = res.json.results[0];
      expect(row.label).toBe('r2');
      expect(row.obj).toEqual({ a: { b: 2 } });
      expect(row).not.toHaveProperty('name');
    },
  },
  {
    name: 'keys with a sub-key that is absent on a row leaves it out',
    method: 'GET',
    path: '/classes/Q',
    query: { keys: 'obj.c', where: JSON.stringify({ n: 3 }) },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.results[0].obj ?? {}).toEqual({});
    },
  },
  {
    name: 'excludeKeys drops fields',
    method: 'GET',
    path: '/classes/Q',
    query: { excludeKeys: 'tags,obj', where: JSON.stringify({ n: 1 }) },
    status: 200,
    after: async (_ctx, res) => {
      const row = res.json.results[0];
      expect(row).not.toHaveProperty('tags');
      expect(row).not.toHaveProperty('obj');
      expect(row.name).toBe('alpha');
    },
  },
  {
    name: 'excludeKeys with a dot path drops only that sub-key',
    method: 'GET',
    path: '/classes/Q',
    query: { excludeKeys: 'obj.a.b', where: JSON.stringify({ n: 2 }) },
    status: 200,
    after: async ({ t }, res) => {
      const row = res.json.results[0];
      const full = await t.request('GET', `/classes/Q/${row.objectId}`, { as: 'master' });
      const expected = structuredClone(full.json.obj);
      delete expected.a.b;
      expect(row.obj).toEqual(expected);
      expect(full.json.obj.a.b).toBe(2);
    },
  },
  {
    name: 'keys and excludeKeys together',
    method: 'GET',
    path: '/classes/Q',
    query: { keys: 'name,n', excludeKeys: 'n', where: JSON.stringify({ n: 1 }) },
    status: 200,
    after: async (_ctx, res) => {
      const row = res.json.results[0];
      expect(row.name).toBe('alpha');
      expect(row).not.toHaveProperty('n');
    },
  },
  {
    name: 'a where sent with the POST _method=GET form works the same',
    method: 'POST',
    path: '/classes/Q',
    body: { _method: 'GET', where: { n: { $in: [2, 3] } }, order: '-n' },
    status: 200,
    after: async (_ctx, res) => {
      expect(labels(res.json.results)).toEqual(['r3', 'r2']);
    },
  },
];

runScenarios('queries: order, limit, skip, keys, count', shapeScenarios, { setup: setupQ });

// ---------------------------------------------------------------------------------------------
// Bad queries: 102 with a clear text, and nothing changes.
// ---------------------------------------------------------------------------------------------

const nest = (depth: number): Record<string, unknown> => {
  let where: Record<string, unknown> = { n: 1 };
  for (let i = 0; i < depth; i++) where = { $or: [where, { n: 2 }] };
  return where;
};
const nestSubqueries = (depth: number): Record<string, unknown> => {
  let where: Record<string, unknown> = { name: 'x' };
  for (let i = 0; i < depth; i++) where = { owner: { $inQuery: { className: 'Q', where } } };
  return where;
};

const badScenarios: Scenario[] = [
  bad('an unknown query parameter', { foo: 'bar' }, 'Invalid parameter for query: foo'),
  bad('where that is not JSON', { where: '{"n":' }, 'not valid JSON'),
  bad('where that is an array', { where: [1] }, 'must be a JSON object'),
  bad('where that is a string', { where: '"n"' }, 'must be a JSON object'),
  bad('an unknown field operator', { where: { n: { $foo: 1 } } }, 'unknown operator $foo'),
  // A key that names no field is 105, as the incumbent answers (the stock SDKs test for it).
  bad(
    'an unknown top-level operator',
    { where: { $foo: [] } },
    'unknown top-level operator $foo',
    'rest',
    105,
  ),
  bad('operators mixed with plain keys', { where: { obj: { $gt: 1, a: 2 } } }, 'cannot be mixed'),
  bad('an invalid key name', { where: { 'bad key': 1 } }, 'invalid key name', 'rest', 105),
  bad('$in with a non-array', { where: { n: { $in: 1 } } }, '$in on n takes an array'),
  bad('$all with a non-array', { where: { tags: { $all: 'a' } } }, '$all on tags takes an array'),
  bad('$exists with a non-boolean', { where: { n: { $exists: 1 } } }, '$exists on n takes a boolean'),
  bad('$or with an empty array', { where: { $or: [] } }, '$or takes a non-empty array'),
  bad('$and with a non-array', { where: { $and: { n: 1 } } }, '$and takes a non-empty array'),
  bad('an invalid regex', { where: { name: { $regex: '(' } } }, 'not a valid regular expression'),
  bad(
    'an invalid regex (bad class)',
    { where: { name: { $regex: '[z-a]' } } },
    'not a valid regular expression',
  ),
  bad('$regex with a non-string', { where: { name: { $regex: 5 } } }, '$regex on name takes a string'),
  bad('$options with an unknown flag', { where: { name: { $regex: 'a', $options: 'g' } } }, 'i, m, x and s'),
  bad('$options without $regex', { where: { name: { $options: 'i' } } }, 'needs $regex'),
  bad('$regex on a Number field', { where: { n: { $regex: '1' } } }, '$regex needs a String field'),
  // A relation compared with pointers reads its join table (as $relatedTo); it has no order.
  bad('a relation ordered by value', { where: { rel: { $gt: 'x' } } }, 'query it with $relatedTo'),
  bad('$relatedTo without an object', { where: { $relatedTo: { key: 'members' } } }, '$relatedTo takes'),
  bad(
    '$select without a key',
    { where: { city: { $select: { query: { className: 'Person' } } } } },
    '$select on city',
  ),
  bad('$inQuery without a className', { where: { owner: { $inQuery: { where: {} } } } }, '$inQuery on owner'),
  bad(
    '$inQuery on a String field',
    { where: { name: { $inQuery: { className: 'Person', where: {} } } } },
    'Pointer',
  ),
  bad(
    'a malformed pointer value',
    { where: { owner: { __type: 'Pointer', className: 'Person' } } },
    'malformed pointer',
  ),
  bad('a Date with a bad iso', { where: { when: { __type: 'Date', iso: 'soon' } } }, 'bad iso'),
  bad('an unknown __type', { where: { n: { __type: 'Banana' } } }, 'unsupported __type'),
  bad('a sub-key of a non-object field', { where: { 'name.x': 1 } }, 'only Object fields have sub-keys'),
  bad('a negative limit', { limit: '-1' }, 'Invalid limit'),
  bad('a non-numeric limit', { limit: 'ten' }, 'Invalid limit'),
  bad('a fractional skip', { skip: '1.5' }, 'Invalid skip'),
  bad('an invalid order key', { order: 'n;DROP TABLE Q' }, 'Invalid order', 'rest', 105),
  bad('an invalid keys entry', { keys: 'a b' }, 'Invalid keys', 'rest', 105),
  bad('an invalid count', { count: 'yes' }, 'Invalid count'),
  bad(
    'ordering comparison on an Object field',
    { where: { obj: { $gt: { a: 1 } } } },
    'compared for equality',
  ),
  bad(
    'queryDepth: nesting over the default cap of 10',
    { where: nest(11) },
    'Query condition nesting depth of 11 exceeds the maximum of 10.',
  ),
  bad(
    'subqueryDepth: subqueries over the default cap of 10',
    { where: nestSubqueries(11) },
    'Subquery depth of 11 exceeds the maximum of 10.',
  ),
  find('queryDepth: nesting at the cap is fine', nest(10), ['r1', 'r2']),
  find('subqueryDepth: subqueries at the cap are fine', nestSubqueries(10), []),
  find('the master key is exempt from queryDepth', nest(12), ['hidden', 'r1', 'r2'], { as: 'master' }),
  find('the master key is exempt from subqueryDepth', nestSubqueries(12), [], { as: 'master' }),
  {
    name: 'after every bad query, the rows are unchanged',
    method: 'GET',
    path: '/classes/Q',
    as: 'master',
    query: { count: '1', limit: '0' },
    status: 200,
    expect: { count: 7 },
    after: async (ctx) => {
      const row = await ctx.t.request('GET', `/classes/Q/${ctx.vars.r1}`, { as: 'master' });
      expect(row.json).toMatchObject({ name: 'alpha', n: 1, tags: ['a', 'b'] });
      const schema = await ctx.t.request('GET', '/schemas/Q', { as: 'master' });
      expect(Object.keys(schema.json.fields)).not.toContain('foo');
    },
  },
];

runScenarios('queries: bad input is 102', badScenarios, {
  setup: async (ctx) => {
    await setupQ(ctx);
    // A relation field on Q for the "relation queried by value" row.
    await ctx.t.request('PUT', `/classes/Q/${ctx.vars.r6}`, {
      as: 'master',
      body: { rel: { __op: 'AddRelation', objects: [ptr('Person', ctx.vars.ann!)] } },
    });
  },
});

runScenarios(
  'queries: requestComplexity -1 removes the caps',
  [find('queryDepth -1', nest(15), ['r1', 'r2']), find('subqueryDepth -1', nestSubqueries(15), [])],
  { setup: setupQ, serviceOptions: { requestComplexity: { queryDepth: -1, subqueryDepth: -1 } } },
);

runScenarios(
  'queries: lower caps',
  [
    bad('queryDepth 2', { where: nest(3) }, 'Query condition nesting depth of 3 exceeds the maximum of 2.'),
    find('queryDepth 2 allows 2', nest(2), ['r1', 'r2']),
    bad('subqueryDepth 1', { where: nestSubqueries(2) }, 'Subquery depth of 2 exceeds the maximum of 1.'),
    bad(
      'subqueryDepth counts $select too',
      {
        where: {
          city: {
            $select: {
              key: 'city',
              query: { className: 'Person', where: { club: { $inQuery: { className: 'Club', where: {} } } } },
            },
          },
        },
      },
      'Subquery depth of 2 exceeds the maximum of 1.',
    ),
  ],
  { setup: setupQ, serviceOptions: { requestComplexity: { queryDepth: 2, subqueryDepth: 1 } } },
);

// ---------------------------------------------------------------------------------------------
// The SQL does the work: ACL filtering happens before limit, skip and count.
// ---------------------------------------------------------------------------------------------

describe('queries: limit, skip and count with rows hidden by ACL', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ maxLimit: 150 });
    // 120 rows, i = 0..119; every odd row is readable by nobody but the master key.
    const requests = Array.from({ length: 120 }, (_, i) => ({
      method: 'POST',
      path: '/classes/Vis',
      body: i % 2 === 1 ? { i, ACL: {} } : { i },
    }));
    for (let k = 0; k < requests.length; k += 50) {
      const res = await t.request('POST', '/batch', {
        as: 'master',
        body: { requests: requests.slice(k, k + 50) },
      });
      expect(res.status, res.text).toBe(200);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  const ids = (res: { json: { results: Rows } }) => res.json.results.map((r) => r.i);

  it('count counts only readable rows', async () => {
    const res = await t.request('GET', '/classes/Vis', { query: { count: 1, limit: 0 } });
    expect(res.json).toEqual({ results: [], count: 60 });
    const master = await t.request('GET', '/classes/Vis', { as: 'master', query: { count: 1, limit: 0 } });
    expect(master.json.count).toBe(120);
  });

  it('count with a where counts only readable matches', async () => {
    const res = await t.request('GET', '/classes/Vis', {
      query: { count: 1, limit: 0, where: { i: { $gte: 100 } } },
    });
    expect(res.json.count).toBe(10);
  });

  it('limit returns that many readable rows', async () => {
    const res = await t.request('GET', '/classes/Vis', { query: { order: 'i', limit: 3 } });
    expect(ids(res)).toEqual([0, 2, 4]);
  });

  it('skip skips readable rows only', async () => {
    const res = await t.request('GET', '/classes/Vis', { query: { order: 'i', limit: 3, skip: 3 } });
    expect(ids(res)).toEqual([6, 8, 10]);
    const tail = await t.request('GET', '/classes/Vis', { query: { order: '-i', skip: 58 } });
    expect(ids(tail)).toEqual([2, 0]);
    const past = await t.request('GET', '/classes/Vis', { query: { skip: 60 } });
    expect(ids(past)).toEqual([]);
  });

  it('the default limit is 100', async () => {
    const res = await t.request('GET', '/classes/Vis', { as: 'master' });
    expect(res.json.results).toHaveLength(100);
  });

  it('a limit over maxLimit is capped at maxLimit', async () => {
    const res = await t.request('GET', '/classes/Vis', { as: 'master', query: { limit: 1000 } });
    expect(res.json.results).toHaveLength(120);
    const small = await startService({ maxLimit: 5 });
    try {
      await small.request('POST', '/batch', {
        as: 'master',
        body: {
          requests: Array.from({ length: 8 }, (_, i) => ({
            method: 'POST',
            path: '/classes/Cap',
            body: { i },
          })),
        },
      });
      const capped = await small.request('GET', '/classes/Cap', { query: { limit: 50 } });
      expect(capped.json.results).toHaveLength(5);
      const counted = await small.request('GET', '/classes/Cap', { query: { limit: 50, count: 1 } });
      expect(counted.json.count).toBe(8);
    } finally {
      await small.close();
    }
  });

  it('count and results agree for a paged walk', async () => {
    const seen: number[] = [];
    for (let skip = 0; ; skip += 7) {
      const res = await t.request('GET', '/classes/Vis', { query: { order: 'i', limit: 7, skip } });
      if (res.json.results.length === 0) break;
      seen.push(...(ids(res) as number[]));
    }
    expect(seen).toEqual(Array.from({ length: 60 }, (_, k) => k * 2));
  });

  it('$or and $nor never reveal hidden rows', async () => {
    const res = await t.request('GET', '/classes/Vis', {
      query: { where: { $or: [{ i: 1 }, { i: 2 }, { i: 3 }] }, count: 1 },
    });
    expect(ids(res)).toEqual([2]);
    expect(res.json.count).toBe(1);
    const nor = await t.request('GET', '/classes/Vis', {
      query: { where: { $nor: [{ i: { $lt: 116 } }] }, count: 1, order: 'i' },
    });
    expect(ids(nor)).toEqual([116, 118]);
    expect(nor.json.count).toBe(2);
  });
});

describe('queries: the SQL does the filtering, ordering and paging', () => {
  let t: TestService;
  const log: Array<{ sql: string; rows: number }> = [];
  beforeAll(async () => {
    t = await startService();
    for (let i = 0; i < 30; i++) await seed(t, 'Paged', i % 3 === 0 ? { i, ACL: {} } : { i });
    // Record every read statement and how many rows the database handed back.
    const driver = (
      t.service.core.store as unknown as {
        driver: { all: (sql: string, p: unknown[]) => Promise<unknown[]> };
      }
    ).driver;
    const all = driver.all.bind(driver);
    driver.all = async (sql, params) => {
      const rows = await all(sql, params);
      log.push({ sql, rows: rows.length });
      return rows;
    };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a find reads exactly the page it answers, with the ACL, order and limit in the statement', async () => {
    log.length = 0;
    const res = await t.request('GET', '/classes/Paged', {
      query: { where: { i: { $gte: 5 } }, order: '-i', limit: 4, skip: 2 },
    });
    expect(res.json.results.map((r: { i: number }) => r.i)).toEqual([26, 25, 23, 22]);
    const select = log.find((l) => l.sql.includes('FROM "Paged"'))!;
    expect(select.sql).toMatch(/_rperm/);
    expect(select.sql).toMatch(/ORDER BY .*"i" DESC/);
    expect(select.sql).toMatch(/LIMIT 4 OFFSET 2/);
    expect(select.rows).toBe(4);
  });

  it('count is a COUNT in SQL, not a read of the rows', async () => {
    log.length = 0;
    const res = await t.request('GET', '/classes/Paged', { query: { count: 1, limit: 0 } });
    expect(res.json.count).toBe(20);
    expect(log.some((l) => /SELECT \* FROM "Paged"/.test(l.sql))).toBe(false);
  });
});
