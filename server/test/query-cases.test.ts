import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BdsError } from '../src/kernel/errors.ts';
import type { QueryNode } from '../src/kernel/query.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';
import {
  compileMatcher,
  type RelationNode,
  replaceNodes,
  type UnresolvedNode,
  unresolvedNodes,
  type WireRow,
} from '../src/query/match.ts';
import { parseWhere } from '../src/query/parse.ts';
import { startService, type TestService } from './helpers/service.ts';
import {
  date,
  gp,
  ITEM_ROWS,
  ODD_ROWS,
  PEOPLE,
  ptr,
  QUERY_CASES,
  type QueryCase,
  SF,
} from './query-cases.ts';

/**
 * Runs every case of query-cases.ts, and then random wheres, through both evaluators of the where
 * language: the SQL path (a find on the real service, with the master key) and the in-memory
 * matcher over the same rows as the REST API returns them. Their answers must be the same.
 */

let t: TestService;
/** `{name}` placeholders -> objectIds (and a few createdAt values). */
const vars: Record<string, string> = {};
/** Per class: its schema and every row, as GET /schemas and GET /classes answer them. */
const classes: Record<string, { schema: ClassSchema; rows: WireRow[] }> = {};

/** Replaces `{name}` inside every string of a value by `vars[name]`. */
function fill<T>(value: T): T {
  if (typeof value === 'string') {
    return value.replace(/\{([\w:-]+)\}/g, (whole, name: string) => vars[name] ?? whole) as T;
  }
  if (Array.isArray(value)) return value.map(fill) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)])) as T;
  }
  return value;
}

async function create(className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body: fill(body) });
  if (res.status !== 201) throw new Error(`seeding ${className} failed: ${res.status} ${res.text}`);
  return res.json.objectId as string;
}

async function load(className: string): Promise<{ schema: ClassSchema; rows: WireRow[] }> {
  const schema = await t.request('GET', `/schemas/${className}`, { as: 'master' });
  const rows = await t.request('GET', `/classes/${className}`, { as: 'master', query: { limit: '1000' } });
  expect(schema.status).toBe(200);
  expect(rows.status).toBe(200);
  return { schema: schema.json as ClassSchema, rows: rows.json.results as WireRow[] };
}

beforeAll(async () => {
  // Every shape a find shows qualifies for an automatic index (built by the test below).
  t = await startService({ autoIndex: { minRows: 0, minSightings: 1, maxPerClass: 64 } });
  for (const [name, body] of Object.entries(PEOPLE)) vars[name] = await create('Person', body);
  for (const row of ITEM_ROWS) vars[row.label as string] = await create('Item', row);
  for (const row of ODD_ROWS) await create('Odd', row);
  // Odd's dates (years after 9999 and before 0 among them) are indexed, Item's are not: the SQL
  // for ranges on a Date column differs between the two (see storage/sql/where.ts, `ordered`).
  const indexed = await t.request('PUT', '/schemas/Odd', {
    as: 'master',
    body: { className: 'Odd', indexes: { when_1: { when: 1 } } },
  });
  if (indexed.status !== 200) throw new Error(`indexing Odd.when failed: ${indexed.status} ${indexed.text}`);
  vars.g1 = await create('Group', {
    name: 'g1',
    items: { __op: 'AddRelation', objects: [ptr('Item', vars.r1!), ptr('Item', vars.r3!)] },
  });
  for (const className of ['Person', 'Item', 'Odd']) classes[className] = await load(className);
  for (const row of classes.Item!.rows) vars[`createdAt:${row.label}`] = row.createdAt as string;
});

afterAll(async () => {
  await t?.close();
});

/** Labels sorted, or the protocol error; both evaluators answer in this shape. */
type Answer = string[] | { status: number; code: number; error: string };

/** Labels of the rows with these objectIds (labels are unique in each class). */
function labelsOf(className: string, ids: string[]): string[] {
  const byId = new Map(classes[className]!.rows.map((r) => [r.objectId as string, r.label as string]));
  return ids.map((id) => byId.get(id) ?? `unknown ${id}`).sort();
}

async function sqlAnswer(className: string, where: unknown): Promise<Answer> {
  const res = await t.request('GET', `/classes/${className}`, {
    as: 'master',
    query: { where: JSON.stringify(where), limit: '1000', keys: 'objectId' },
  });
  if (res.status !== 200) return { status: res.status, code: res.json.code, error: res.json.error };
  return labelsOf(
    className,
    res.json.results.map((r: WireRow) => r.objectId as string),
  );
}

async function matcherAnswer(className: string, where: unknown): Promise<Answer> {
  let matches: (row: WireRow) => boolean;
  const { schema, rows } = classes[className]!;
  try {
    matches = compileMatcher(await resolveLookups(className, parseWhere(where)), schema);
  } catch (err) {
    if (!(err instanceof BdsError)) throw err;
    return { status: err.httpStatus, code: err.code, error: err.message };
  }
  return labelsOf(
    className,
    rows.filter(matches).map((r) => r.objectId as string),
  );
}

/**
 * What the data layer does before matching one row: each subquery and $relatedTo becomes an `in`
 * list. Here the lookups use the master key: subqueries run through the matcher over the loaded
 * rows of their class, $relatedTo asks the service.
 */
async function resolveLookups(className: string, node: QueryNode): Promise<QueryNode> {
  const answers = new Map<UnresolvedNode | RelationNode, QueryNode>();
  const schema = classes[className]?.schema;
  for (const pending of unresolvedNodes(node, schema)) answers.set(pending, await lookup(className, pending));
  return replaceNodes(node, (pending) => answers.get(pending)!, schema);
}

/** The objectIds of the rows of `className` the service finds for `where`, as an `in` node. */
async function askService(className: string, where: unknown): Promise<QueryNode> {
  const res = await t.request('GET', `/classes/${className}`, {
    as: 'master',
    query: { where: JSON.stringify(where), keys: 'objectId', limit: '1000' },
  });
  const values = res.json.results.map((r: WireRow) => r.objectId);
  return { type: 'in', path: ['objectId'], values, not: false };
}

async function lookup(className: string, node: UnresolvedNode | RelationNode): Promise<QueryNode> {
  if (node.type === 'relatedTo') {
    return askService(className, {
      $relatedTo: { object: ptr(node.owner.className, node.owner.objectId), key: node.key },
    });
  }
  // A condition on a Relation field: the rows its join table names.
  if (node.type === 'compare') {
    const op = node.op === 'eq' ? '$eq' : '$ne';
    return askService(className, { [node.path[0]!]: { [op]: node.value } });
  }
  if (node.type === 'in') {
    return askService(className, { [node.path[0]!]: { [node.not ? '$nin' : '$in']: node.values } });
  }
  const inner = classes[node.query.className];
  const matches = inner
    ? compileMatcher(await resolveLookups(node.query.className, node.query.where), inner.schema)
    : () => false;
  const rows = inner?.rows.filter(matches) ?? [];
  if (node.type === 'inQuery') {
    const values = rows.map((r) => ptr(node.query.className, r.objectId as string));
    return { type: 'in', path: node.path, values, not: node.not };
  }
  const values = rows
    .map((r) => node.key.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown>)?.[k], r))
    .filter((v) => v !== undefined && v !== null);
  return { type: 'in', path: node.path, values, not: node.not };
}

const INTERNAL_ERROR: Answer = { status: 500, code: 1, error: 'Internal server error.' };

function expectedSql(kase: QueryCase): Answer {
  if (kase.known) return kase.known.sql === 500 ? INTERNAL_ERROR : [...kase.known.sql].sort();
  return [...kase.expect!].sort();
}

describe('the where language: SQL and the in-memory matcher agree on the shared cases', () => {
  it('the seeded rows have unique labels', () => {
    for (const { rows } of Object.values(classes)) {
      const labels = rows.map((r) => r.label ?? r.name);
      expect(new Set(labels).size).toBe(rows.length);
    }
  });

  for (const kase of QUERY_CASES) {
    const title = kase.known ? `${kase.name} (known difference)` : kase.name;
    it(title, async () => {
      const className = kase.className ?? 'Item';
      const where = fill(kase.where);
      const sql = await sqlAnswer(className, where);
      const memory = await matcherAnswer(className, where);
      if (kase.error) {
        const refusal = { status: 400, code: kase.code ?? 102, error: kase.error };
        expect(sql).toEqual(refusal);
        expect(memory).toEqual(refusal);
        return;
      }
      expect(memory).toEqual([...kase.expect!].sort());
      expect(sql).toEqual(expectedSql(kase));
    });
  }
});

describe('automatic indexes change no answer (docs/protocol.md#performance)', () => {
  it('every case answers the same before and after the indexes its shapes get', async () => {
    const cases = QUERY_CASES.filter((kase) => !kase.error);
    const before: Answer[] = [];
    for (const kase of cases) before.push(await sqlAnswer(kase.className ?? 'Item', fill(kase.where)));
    const performance = t.service.core.store.performance!;
    await performance.tick();
    const built = performance.report().indexes.map((index) => index.name);
    expect(built).toContain('Item:auto:n');
    expect(built).toContain('Item:auto:s');
    expect(built.length).toBeGreaterThan(5);
    const after: Answer[] = [];
    for (const kase of cases) after.push(await sqlAnswer(kase.className ?? 'Item', fill(kase.where)));
    expect(after).toEqual(before);
    // And the finds that answered were served by the indexes built.
    expect(performance.report().shapes.filter((shape) => shape.index === null)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Random wheres over the Item and Odd rows.
// ---------------------------------------------------------------------------------------------

const STRINGS = [
  'alpha',
  'beta',
  'gamma',
  'Delta',
  '',
  'x\uFFFD',
  'x\u{1F600}',
  'epsilon\nline2',
  'a',
  'b',
  'zzz',
];
const NUMBERS = [-3, -1, 0, 1, 2, 2.5, 3, 4, 5.5, 6, 7, 9, 100, 1000000];
const ISO = [
  '2023-12-31',
  '2024-01-01',
  '2024-02-01',
  '2024-03-01',
  '2024-03-15',
  '2024-04-01',
  '2024-07-01',
].map((d) => `${d}T00:00:00.000Z`);
/** Dates outside the years 0 to 9999 (ISO text with a sign), as the Odd rows hold. */
const FAR_ISO = ['+010000-01-01T00:00:00.000Z', '+020000-01-01T00:00:00.000Z', '-000100-06-01T00:00:00.000Z'];
const PERSONS = [
  ptr('Person', '{ann}'),
  ptr('Person', '{bob}'),
  ptr('Person', '{cy}'),
  ptr('Person', 'ghost'),
];
const REGEXES = ['^a', 'a', 'A', '^x.$', 'line2$', '^$', '.', 'e', '^[a-d]', 'inner', '1'];
const POINTS = [SF, gp(35.6762, 139.6503), gp(0, 0), gp(-15, 178), gp(-13.8, -172.1)];
const polygon = (...coordinates: Array<[number, number]>) => ({ __type: 'Polygon', coordinates });
const POLYGONS = [
  polygon([37, -123], [38.5, -123], [38.5, -122], [37, -122]),
  polygon([30, 129], [46, 129], [46, 146], [30, 146]),
];

/**
 * Values of every kind, compared with every key: a value of another kind than the key holds
 * matches nothing, whatever SQLite's own conversions would make of it (numbers in text, booleans
 * as 1/0, dates as text).
 */
const ANY_KIND: unknown[] = [
  '2',
  '1.5',
  'one',
  'x',
  1,
  2,
  1.5,
  0,
  true,
  false,
  date('2024-01-01T00:00:00.000Z'),
  ...FAR_ISO.map(date),
  '2024-01-01T00:00:00.000Z',
  ptr('Person', '{ann}'),
  ptr('Club', '{ann}'),
  { k: 'v' },
  { inner: 'b' },
  [1, 2],
  [5, 6],
  { __type: 'File', name: '00000000000000000000000000000000_a.txt' },
  { __type: 'Bytes', base64: 'AQI=' },
  SF,
  POLYGONS[0],
];

const Comparisons = ['$eq', '$ne', '$lt', '$lte', '$gt', '$gte'] as const;

/**
 * Wheres on one key: `values` are mostly of the key's own type, and now and then of any kind.
 * `array`: the key is an Array ($all and $containedBy apply); `order`: the ordering operators
 * apply (they are refused on GeoPoint and Object fields, as the table shows).
 */
function leaves(
  key: string,
  own: fc.Arbitrary<unknown>,
  options: { array?: boolean; order?: boolean; regex?: boolean } = {},
): fc.Arbitrary<Record<string, unknown>> {
  const { array = false, order = true, regex = false } = options;
  const values = fc.oneof(
    { weight: 4, arbitrary: own },
    { weight: 1, arbitrary: fc.constantFrom(...ANY_KIND) },
  );
  const list = fc.array(values, { maxLength: 4 });
  const ops = order ? Comparisons : (['$eq', '$ne'] as const);
  const arbs: Array<fc.Arbitrary<Record<string, unknown>>> = [
    fc.tuple(fc.constantFrom(...ops), values).map(([op, value]) => ({ [key]: { [op]: value } })),
    fc.boolean().map((exists) => ({ [key]: { $exists: exists } })),
    list.map((l) => ({ [key]: { $in: l } })),
    list.map((l) => ({ [key]: { $nin: l } })),
  ];
  if (array) {
    arbs.push(
      list.map((l) => ({ [key]: { $all: l } })),
      list.map((l) => ({ [key]: { $containedBy: l } })),
    );
  }
  if (regex) {
    arbs.push(
      fc
        .tuple(fc.constantFrom(...REGEXES), fc.constantFrom('', 'i', 'm', 's', 'im'))
        .map(([source, options]) => ({ [key]: { $regex: source, $options: options } })),
    );
  }
  return fc.oneof(...arbs);
}

const orNull = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 6, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) });
const str = orNull(fc.constantFrom(...STRINGS));
const num = orNull(fc.constantFrom(...NUMBERS));
const dateValue = orNull(
  fc.oneof(fc.constantFrom(...ISO, ...FAR_ISO).map(date), fc.constantFrom(...ISO, ...FAR_ISO)),
);

const geoLeaves: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...POINTS), fc.constantFrom(undefined, 0, 0.01, 0.1, 1, 3))
    .map(([point, max]) => ({
      loc: max === undefined ? { $nearSphere: point } : { $nearSphere: point, $maxDistance: max },
    })),
  fc
    .constantFrom(
      [gp(33, -123), gp(38, -118)],
      [gp(-20, 170), gp(-10, -170)],
      [gp(-90, -180), gp(90, 180)],
      [gp(30, 100), gp(50, 150)],
    )
    .map((box) => ({ loc: { $within: { $box: box } } })),
  fc
    .constantFrom(
      [gp(37, -123), gp(38.5, -123), gp(38.5, -122), gp(37, -122)],
      [gp(30, 129), gp(46, 129), gp(46, 146), gp(30, 146)],
    )
    .map((polygon) => ({ loc: { $geoWithin: { $polygon: polygon } } })),
  fc.tuple(fc.constantFrom(...POINTS), fc.constantFrom(0, 0.01, 0.5, 2)).map(([center, radius]) => ({
    loc: { $geoWithin: { $centerSphere: [center, radius] } },
  })),
  fc
    .constantFrom(...POINTS, gp(37.5, -122.5))
    .map((point) => ({ area: { $geoIntersects: { $point: point } } })),
  // Geo operators below an Object, where any JSON may be stored.
  fc
    .tuple(fc.constantFrom('obj.a', 'obj.c', 'obj.k'), fc.constantFrom(...POINTS))
    .map(([key, point]) => ({ [key]: { $nearSphere: point, $maxDistance: 3 } })),
  leaves('loc', orNull(fc.constantFrom(...POINTS)), { order: false }),
  leaves('area', orNull(fc.constantFrom(...POLYGONS)), { order: false }),
);

const leafArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  leaves('s', str, { regex: true }),
  leaves('n', num),
  leaves('flag', orNull(fc.boolean())),
  leaves('when', dateValue),
  leaves('createdAt', fc.constantFrom('{createdAt:r1}', '{createdAt:r5}', '{createdAt:hidden}').map(date)),
  leaves('objectId', fc.constantFrom('{r1}', '{r2}', '{r5}', '{hidden}', 'nope'), { regex: true }),
  leaves('owner', orNull(fc.constantFrom(...PERSONS, ptr('Club', '{ann}')))),
  leaves('tags', fc.oneof(str, fc.constantFrom([], ['b', 'c'], ['a', 'b'])), { array: true }),
  leaves('nums', fc.oneof(num, fc.constantFrom([], [2], [7, 1])), { array: true }),
  leaves('refs', orNull(fc.constantFrom(...PERSONS)), { array: true }),
  leaves('mixed', orNull(fc.constantFrom<unknown>('x', 'y', 7, true, { k: 'v' }, [1, 2])), { array: true }),
  leaves('obj', orNull(fc.constantFrom({}, { c: 'x\u{1F600}' }, { c: 'X' })), { order: false }),
  leaves('obj.a.b', num),
  leaves('obj.a', orNull(fc.constantFrom({ b: 1 }, { b: 2 }, { b: null })), { array: true }),
  leaves('obj.c', str, { regex: true, array: true }),
  leaves('obj.k', orNull(fc.constantFrom<unknown>('one', 'two', 2, 3, true, false)), { regex: true }),
  leaves('obj.seen', orNull(fc.constantFrom(...ISO, ...FAR_ISO).map(date))),
  leaves('obj.list', orNull(fc.constantFrom([5, 6], [6, 5], [5], 5, 6)), { array: true }),
  leaves(
    'file',
    orNull(
      fc.constantFrom(
        { __type: 'File', name: '00000000000000000000000000000000_a.txt' },
        { __type: 'File', name: '00000000000000000000000000000000_c.txt' },
      ),
    ),
  ),
  leaves(
    'bytes',
    orNull(fc.constantFrom({ __type: 'Bytes', base64: 'AQI=' }, { __type: 'Bytes', base64: 'AAA=' })),
  ),
  leaves('nope', fc.oneof(str, num)),
  geoLeaves,
);

/** Keys a $select may name, in the outer and in the inner class: every field type, sub-keys too. */
const SELECT_KEYS = [
  's',
  'n',
  'flag',
  'when',
  'createdAt',
  'objectId',
  'owner',
  'tags',
  'nums',
  'mixed',
  'obj',
  'obj.a',
  'obj.c',
  'obj.k',
  'obj.seen',
  'obj.list',
  'loc',
  'area',
  'file',
  'bytes',
  'nope',
];

/** $select and $dontSelect between any two keys, $inQuery and $notInQuery on pointers and arrays. */
const subqueryArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...SELECT_KEYS),
      fc.constantFrom('Item', 'Odd'),
      fc.constantFrom(...SELECT_KEYS),
      leafArb,
      fc.boolean(),
    )
    .map(([key, className, innerKey, where, not]) => ({
      [key]: { [not ? '$dontSelect' : '$select']: { query: { className, where }, key: innerKey } },
    })),
  fc
    .tuple(
      fc.constantFrom('owner', 'refs', 'mixed', 'tags', 'nope'),
      fc.oneof(leaves('age', num), leaves('name', fc.constantFrom('ann', 'bob', 'cy')), leaves('city', str)),
      fc.boolean(),
    )
    .map(([key, where, not]) => ({
      [key]: { [not ? '$notInQuery' : '$inQuery']: { className: 'Person', where } },
    })),
);

const logic = (op: '$and' | '$or' | '$nor', child: fc.Arbitrary<unknown>) =>
  fc.array(child, { minLength: 1, maxLength: 3 }).map((children) => ({ [op]: children }));

const { where: whereArb } = fc.letrec<{ where: unknown }>((tie) => ({
  where: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'where' },
    leafArb,
    subqueryArb,
    logic('$and', tie('where')),
    logic('$or', tie('where')),
    logic('$nor', tie('where')),
  ),
}));

describe('the where language: random wheres', () => {
  // A thousand requests: about 10 s on a busy machine, so a generous bound of its own.
  it('SQL and the matcher return the same rows for random wheres over every field type', {
    timeout: 120_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('Item', 'Odd'), whereArb, async (className, where) => {
        const filled = fill(where);
        expect(await matcherAnswer(className, filled)).toEqual(await sqlAnswer(className, filled));
      }),
      { numRuns: 1000 },
    );
  });
});
