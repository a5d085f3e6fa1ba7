/**
 * The shared table of where cases: every case runs through the SQL path (a find on the real
 * service) and through the in-memory matcher (`compileMatcher`) over the same rows, and both must
 * return exactly `expect` (labels of the seeded rows). See query-cases.test.ts.
 *
 * Strings such as `{ann}` or `{r2}` stand for the objectId of the seeded row with that name.
 *
 * A case with `known` is a known difference: SQL answers `known.sql` today, the matcher answers
 * `expect`, and `known.why` says why SQL is the one that is wrong. The test pins both answers, so
 * fixing storage/sql/where.ts makes that case fail until its `known` marker is removed. No case
 * is marked today.
 */

export const ptr = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });
export const date = (iso: string) => ({ __type: 'Date', iso });
export const gp = (latitude: number, longitude: number) => ({ __type: 'GeoPoint', latitude, longitude });
/** A File value naming an issued file (`<32 hex>_<name>`), the only names a row may hold. */
const file = (name: string, url?: string) => {
  const issued = `${'0'.repeat(32)}_${name}`;
  return url ? { __type: 'File', name: issued, url } : { __type: 'File', name: issued };
};
const bytes = (base64: string) => ({ __type: 'Bytes', base64 });
const polygon = (...coordinates: Array<[number, number]>) => ({ __type: 'Polygon', coordinates });

export const SF = gp(37.7749, -122.4194);
const OAKLAND = gp(37.8044, -122.2712);
const TOKYO = gp(35.6762, 139.6503);
const FIJI = gp(-17.7, 179.9);
const SAMOA = gp(-13.8, -172.1);
const NEW_YORK = gp(40.7128, -74.006);
const BAY = polygon([37, -123], [38.5, -123], [38.5, -122], [37, -122]);
const JAPAN = polygon([30, 129], [46, 129], [46, 146], [30, 146]);
const BAY_VERTICES = [gp(37, -123), gp(38.5, -123), gp(38.5, -122), gp(37, -122)];

/** Rows of Person, the target of pointers and subqueries; cy is readable by the master key only. */
export const PEOPLE: Record<string, Record<string, unknown>> = {
  ann: { name: 'ann', age: 30, city: 'Oslo' },
  bob: { name: 'bob', age: 20, city: 'Rome' },
  cy: { name: 'cy', age: 40, city: 'Paris', ACL: {} },
};

/**
 * The rows of Item: every field type, and values that exercise the edge cases (missing fields,
 * null inside objects, empty arrays, zero, negative numbers, text above U+FFFF, a pointer to a row
 * that does not exist, places on both sides of the antimeridian). The property test generates
 * wheres over these rows too.
 */
export const ITEM_ROWS: Array<Record<string, unknown>> = [
  {
    label: 'r1',
    s: 'alpha',
    n: 1,
    flag: true,
    when: date('2024-01-01T00:00:00.000Z'),
    owner: ptr('Person', '{ann}'),
    tags: ['a', 'b'],
    nums: [7, 1],
    refs: [ptr('Person', '{ann}'), ptr('Person', '{bob}')],
    mixed: ['x', 7, { k: 'v' }],
    obj: { a: { b: 1 }, c: 'x', k: 'one', list: [5, 6] },
    lines: [
      { name: 'x', qty: 2 },
      { name: 'y', qty: 5, tags: ['a'] },
    ],
    loc: SF,
    area: BAY,
    file: file('a.txt', 'http://files/a.txt'),
    bytes: bytes('AQI='),
    city: 'Oslo',
    friends: { __op: 'AddRelation', objects: [ptr('Person', '{ann}')] },
  },
  {
    label: 'r2',
    s: 'beta',
    n: 2,
    flag: false,
    when: date('2024-02-01T00:00:00.000Z'),
    owner: ptr('Person', '{bob}'),
    tags: ['b', 'c'],
    nums: [2],
    refs: [ptr('Person', '{bob}')],
    mixed: [true, 'y'],
    obj: { a: { b: 2 }, c: 'y', seen: date('2024-07-01T00:00:00.000Z'), k: 2 },
    lines: [{ name: 'y', qty: 1 }, 'x', 7],
    loc: OAKLAND,
    file: file('b.txt', 'http://files/b.txt'),
    bytes: bytes('AAA='),
    city: 'Rome',
  },
  {
    label: 'r3',
    s: 'gamma',
    n: 3,
    // Another offset: stored as the same instant in UTC.
    when: date('2024-03-01T02:00:00+02:00'),
    owner: ptr('Person', '{ann}'),
    tags: ['c'],
    nums: [9, 7],
    mixed: [[1, 2], date('2024-01-01T00:00:00.000Z')],
    obj: { a: { b: 3 }, k: true, nested: { deep: 'z' } },
    lines: [{ qty: 9 }, { name: null }],
    loc: TOKYO,
    area: JAPAN,
    city: 'Paris',
  },
  {
    label: 'r4',
    s: 'Delta',
    n: 4,
    when: date('2024-04-01T00:00:00.000Z'),
    owner: ptr('Person', '{cy}'),
    tags: [],
    nums: [],
    refs: [],
    obj: { a: { b: null }, k: null },
    lines: [],
    loc: FIJI,
    city: 'Oslo',
  },
  {
    label: 'r5',
    s: 'epsilon\nline2',
    n: 5.5,
    flag: false,
    tags: ['a'],
    obj: {},
    lines: [{ name: 'X', when: date('2024-05-01T00:00:00.000Z') }],
    loc: SAMOA,
    file: file('c.txt'),
  },
  { label: 'r6', n: 6, refs: [ptr('Person', '{cy}')], obj: { c: 'x\u{1F600}' }, lines: [[{ name: 'x' }]] },
  { label: 'r7' },
  { label: 'r8', s: 'x\uFFFD', n: -3, nums: [-1, 100] },
  { label: 'r9', s: 'x\u{1F600}', n: 0, flag: true, loc: NEW_YORK, obj: { c: 'X' } },
  { label: 'r10', s: '', n: 1000000, tags: ['b'], owner: ptr('Person', 'ghost') },
  // Readable by the master key only; the cases run with it.
  { label: 'hidden', s: 'alpha', n: 1, ACL: {} },
];

/**
 * Rows of Odd: data that SQLite's own conversions once made SQL answer wrongly (a null element, a
 * number as text, 1 where a boolean is asked, dates outside the years 0 to 9999), kept apart from
 * Item. The property test generates wheres over these rows too.
 */
export const ODD_ROWS: Array<Record<string, unknown>> = [
  {
    label: 'plain',
    s: 'plain',
    when: date('2024-01-01T00:00:00.000Z'),
    tags: ['a'],
    obj: { k: 'k', c: 'c' },
  },
  {
    label: 'far',
    when: date('+010000-01-01T00:00:00.000Z'),
    obj: { seen: date('+010000-01-01T00:00:00.000Z') },
    mixed: [date('+010000-01-01T00:00:00.000Z')],
  },
  {
    label: 'ancient',
    when: date('-000100-06-01T00:00:00.000Z'),
    mixed: [date('-000100-06-01T00:00:00.000Z')],
  },
  { label: 'null-element', tags: ['a', null], mixed: [null] },
  { label: 'one', obj: { k: 1 }, mixed: [1] },
  { label: 'json', obj: { c: { inner: 'b' } } },
  { label: 'numeric-text', s: '1.5' },
  {
    label: 'tagged',
    obj: {
      a: SF,
      c: file('a.txt'),
      k: ptr('Person', '{ann}'),
      seen: date('2024-05-01T00:00:00.000Z'),
      list: BAY,
    },
    mixed: [SF, file('a.txt'), bytes('AQI='), ptr('Person', '{ann}'), BAY],
  },
];

export const ITEM_LABELS = ITEM_ROWS.map((r) => r.label as string);
const ALL = ITEM_LABELS;
const except = (...labels: string[]) => ALL.filter((l) => !labels.includes(l));

export interface QueryCase {
  name: string;
  where: Record<string, unknown>;
  /** Item unless told. */
  className?: 'Item' | 'Odd';
  /** The labels of the matching rows; ignored when `error` is set. */
  expect?: string[];
  /** Both refuse the where with `code` (102 unless told) and exactly this text. */
  error?: string;
  code?: number;
  /** A known difference: what SQL answers today (labels, or `500` for an internal error) and why it is wrong. */
  known?: { sql: string[] | 500; why: string };
}

const c = (name: string, where: Record<string, unknown>, expect: string[]): QueryCase => ({
  name,
  where,
  expect,
});
const odd = (name: string, where: Record<string, unknown>, expect: string[]): QueryCase => ({
  name,
  where,
  expect,
  className: 'Odd',
});
const refused = (name: string, where: Record<string, unknown>, error: string, code = 102): QueryCase => ({
  name,
  where,
  error,
  code,
});
/** A key that names no field: 105 (INVALID_KEY_NAME), as the incumbent answers. */
const INVALID_KEY_NAME = 105;

export const QUERY_CASES: QueryCase[] = [
  c('an empty where matches every row', {}, ALL),
  // Strings.
  c('String equality', { s: 'alpha' }, ['r1', 'hidden']),
  c('the empty string is a value', { s: '' }, ['r10']),
  c('equality with null matches rows without the field', { s: null }, ['r6', 'r7']),
  c('$eq', { s: { $eq: 'beta' } }, ['r2']),
  c('$ne includes rows without the field', { s: { $ne: 'alpha' } }, except('r1', 'hidden')),
  c('$ne null means the field is set', { s: { $ne: null } }, except('r6', 'r7')),
  c('$lt on strings is byte order (uppercase first)', { s: { $lt: 'c' } }, [
    'r1',
    'r2',
    'r4',
    'r10',
    'hidden',
  ]),
  c('a range on one key', { s: { $gt: 'a', $lt: 'f' } }, ['r1', 'r2', 'r5', 'hidden']),
  c('$gte', { s: { $gte: 'x' } }, ['r8', 'r9']),
  c('text above U+FFFF sorts after U+FFFD (code point order)', { s: { $gt: 'x\uFFFD' } }, ['r9']),
  c('$lt a character above U+FFFF', { s: { $lt: 'x\u{1F600}' } }, [
    'r1',
    'r2',
    'r3',
    'r4',
    'r5',
    'r8',
    'r10',
    'hidden',
  ]),
  c('$lt null matches nothing', { s: { $lt: null } }, []),
  c('a String never equals a number', { s: 0 }, []),
  // Numbers.
  c('Number equality', { n: 2 }, ['r2']),
  c('zero is a value', { n: 0 }, ['r9']),
  c('$lt', { n: { $lt: 1 } }, ['r8', 'r9']),
  c('$lte', { n: { $lte: 1 } }, ['r1', 'r8', 'r9', 'hidden']),
  c('$gt', { n: { $gt: 5 } }, ['r5', 'r6', 'r10']),
  c('$gte a fraction', { n: { $gte: 5.5 } }, ['r5', 'r6', 'r10']),
  c('$ne on a Number includes rows without it', { n: { $ne: 1 } }, except('r1', 'hidden')),
  c('$gt and $lt on one key', { n: { $gt: 1, $lt: 4 } }, ['r2', 'r3']),
  c('Number null', { n: null }, ['r7']),
  c('$in', { n: { $in: [1, 3, 99] } }, ['r1', 'r3', 'hidden']),
  c('$in with null also matches rows without the field', { n: { $in: [2, null] } }, ['r2', 'r7']),
  c('$nin includes rows without the field', { n: { $nin: [1, 2] } }, except('r1', 'r2', 'hidden')),
  c(
    '$nin with null excludes rows without the field',
    { n: { $nin: [1, null] } },
    except('r1', 'r7', 'hidden'),
  ),
  c('$in with an empty list matches nothing', { n: { $in: [] } }, []),
  c('$nin with an empty list matches everything', { n: { $nin: [] } }, ALL),
  refused(
    '$all needs an Array field',
    { n: { $all: [2] } },
    'Invalid where: $all needs an Array field, n is Number.',
  ),
  refused(
    '$containedBy needs an Array field',
    { n: { $containedBy: [2, 3] } },
    'Invalid where: $containedBy needs an Array field, n is Number.',
  ),
  refused(
    '$containedBy on objectId (a String) is refused, not a 500',
    { objectId: { $containedBy: [] } },
    'Invalid where: $containedBy needs an Array field, objectId is String.',
  ),
  // Booleans.
  c('Boolean true', { flag: true }, ['r1', 'r9']),
  c('Boolean false', { flag: false }, ['r2', 'r5']),
  c('Boolean $ne', { flag: { $ne: true } }, except('r1', 'r9')),
  c('false sorts before true', { flag: { $gt: false } }, ['r1', 'r9']),
  c('Boolean $exists false', { flag: { $exists: false } }, except('r1', 'r2', 'r5', 'r9')),
  // Dates.
  c('Date equality', { when: date('2024-02-01T00:00:00.000Z') }, ['r2']),
  c('a Date with another offset is the same instant', { when: date('2024-01-01T02:00:00+02:00') }, ['r1']),
  c('a stored offset date compares by instant', { when: date('2024-03-01T00:00:00Z') }, ['r3']),
  c('an ISO string compared with a Date field is a date', { when: '2024-01-01T00:00:00Z' }, ['r1']),
  c('a string that is not a date matches nothing', { when: 'not a date' }, []),
  c('$ne a string that is not a date matches everything', { when: { $ne: 'not a date' } }, ALL),
  c(
    'a date range',
    { when: { $gte: date('2024-02-01T00:00:00.000Z'), $lt: date('2024-04-01T00:00:00.000Z') } },
    ['r2', 'r3'],
  ),
  c('$in on dates', { when: { $in: [date('2024-01-01T00:00:00Z'), date('2024-03-01T00:00:00Z')] } }, [
    'r1',
    'r3',
  ]),
  c('$nin on dates', { when: { $nin: [date('2024-01-01T00:00:00Z')] } }, except('r1')),
  c('Date $exists', { when: { $exists: true } }, ['r1', 'r2', 'r3', 'r4']),
  c('createdAt is a Date', { createdAt: { $lte: date('2999-01-01T00:00:00.000Z') } }, ALL),
  c('updatedAt after a far date', { updatedAt: { $gt: date('2999-01-01T00:00:00.000Z') } }, []),
  c('createdAt compared with an ISO string', { createdAt: { $gt: '2000-01-01T00:00:00Z' } }, ALL),
  // objectId.
  c('objectId equality', { objectId: '{r2}' }, ['r2']),
  c('objectId $in', { objectId: { $in: ['{r2}', '{r4}'] } }, ['r2', 'r4']),
  c('objectId $regex', { objectId: { $regex: '^{r3}$' } }, ['r3']),
  // Pointers.
  c('Pointer equality', { owner: ptr('Person', '{ann}') }, ['r1', 'r3']),
  c('Pointer $ne includes rows without it', { owner: { $ne: ptr('Person', '{ann}') } }, except('r1', 'r3')),
  c('Pointer $in', { owner: { $in: [ptr('Person', '{bob}'), ptr('Person', '{cy}')] } }, ['r2', 'r4']),
  c('Pointer $nin', { owner: { $nin: [ptr('Person', '{ann}')] } }, except('r1', 'r3')),
  c('a pointer to another class never matches', { owner: ptr('Club', '{ann}') }, []),
  c('$ne a pointer to another class matches everything', { owner: { $ne: ptr('Club', '{ann}') } }, ALL),
  c('a plain string never equals a Pointer', { owner: '{ann}' }, []),
  c('a pointer to a row that does not exist', { owner: ptr('Person', 'ghost') }, ['r10']),
  c('Pointer $exists false', { owner: { $exists: false } }, ['r5', 'r6', 'r7', 'r8', 'r9', 'hidden']),
  c('ordering pointers compares objectIds', { owner: { $gt: ptr('Person', '') } }, [
    'r1',
    'r2',
    'r3',
    'r4',
    'r10',
  ]),
  // Arrays.
  c('equality on an Array means "contains"', { tags: 'b' }, ['r1', 'r2', 'r10']),
  c('equality with a whole array', { tags: ['b', 'c'] }, ['r2']),
  c('whole-array equality is ordered', { tags: ['c', 'b'] }, []),
  c('the empty array', { tags: [] }, ['r4']),
  c('$ne on an Array: does not contain', { tags: { $ne: 'b' } }, except('r1', 'r2', 'r10')),
  c('$ne a whole array', { tags: { $ne: ['b', 'c'] } }, except('r2')),
  c('Array null: rows without the field', { tags: null }, ['r6', 'r7', 'r8', 'r9', 'hidden']),
  c('Array $in: holds one of the values', { tags: { $in: ['a', 'c'] } }, ['r1', 'r2', 'r3', 'r5']),
  c('Array $nin', { tags: { $nin: ['b'] } }, except('r1', 'r2', 'r10')),
  c('Array $in an empty list', { tags: { $in: [] } }, []),
  c('Array $nin an empty list', { tags: { $nin: [] } }, ALL),
  c('$all', { tags: { $all: ['b', 'c'] } }, ['r2']),
  c('$all with one value', { tags: { $all: ['a'] } }, ['r1', 'r5']),
  c('$all with an empty list matches every row', { tags: { $all: [] } }, ALL),
  c('$all with null matches nothing', { tags: { $all: ['a', null] } }, []),
  c('$containedBy (rows without the field too)', { tags: { $containedBy: ['a', 'b'] } }, [
    'r1',
    'r4',
    'r5',
    'r6',
    'r7',
    'r8',
    'r9',
    'r10',
    'hidden',
  ]),
  c('$containedBy an empty list: empty or missing arrays', { tags: { $containedBy: [] } }, [
    'r4',
    'r6',
    'r7',
    'r8',
    'r9',
    'hidden',
  ]),
  c('Array $exists', { tags: { $exists: true } }, ['r1', 'r2', 'r3', 'r4', 'r5', 'r10']),
  c('numbers in an array', { nums: 7 }, ['r1', 'r3']),
  c('$gt on an array: any element', { nums: { $gt: 8 } }, ['r3', 'r8']),
  c('$lt on an array', { nums: { $lt: 0 } }, ['r8']),
  c('$lte on an array', { nums: { $lte: 1 } }, ['r1', 'r8']),
  c('$gt and $lt on an array may hold for different elements', { nums: { $gt: 1, $lt: 3 } }, [
    'r1',
    'r2',
    'r8',
  ]),
  c('$in on numbers in an array', { nums: { $in: [2, 9] } }, ['r2', 'r3']),
  c('$all on numbers', { nums: { $all: [7, 1] } }, ['r1']),
  c('$containedBy on numbers', { nums: { $containedBy: [1, 7, 9] } }, except('r2', 'r8')),
  c('a string never equals a number in an array', { nums: '7' }, []),
  c('an array of pointers contains a pointer', { refs: ptr('Person', '{bob}') }, ['r1', 'r2']),
  c('$all on pointers', { refs: { $all: [ptr('Person', '{ann}'), ptr('Person', '{bob}')] } }, ['r1']),
  c('$in on pointers', { refs: { $in: [ptr('Person', '{cy}')] } }, ['r6']),
  c('$nin on pointers', { refs: { $nin: [ptr('Person', '{bob}')] } }, except('r1', 'r2')),
  c('$containedBy on pointers', { refs: { $containedBy: [ptr('Person', '{bob}')] } }, except('r1', 'r6')),
  c('a string element', { mixed: 'x' }, ['r1']),
  c('a number element', { mixed: 7 }, ['r1']),
  c('a boolean element', { mixed: true }, ['r2']),
  c('an object element', { mixed: { k: 'v' } }, ['r1']),
  c('an array element', { mixed: { $in: [[1, 2]] } }, ['r3']),
  c('a date element in a mixed list', { mixed: { $in: [date('2024-01-01T00:00:00.000Z'), 'y'] } }, [
    'r2',
    'r3',
  ]),
  c('whole-array equality with a date inside', { mixed: [[1, 2], date('2024-01-01T00:00:00Z')] }, ['r3']),
  c('$all on mixed elements', { mixed: { $all: ['x', 7] } }, ['r1']),
  // Object fields and dot paths.
  c('a key below an Object', { 'obj.c': 'x' }, ['r1']),
  c('two levels deep with $gt', { 'obj.a.b': { $gt: 1 } }, ['r2', 'r3']),
  c('a JSON null below an Object is no value', { 'obj.a.b': null }, except('r1', 'r2', 'r3')),
  c('$exists below an Object', { 'obj.a.b': { $exists: true } }, ['r1', 'r2', 'r3']),
  c('$exists of a sub-object', { 'obj.a': { $exists: true } }, ['r1', 'r2', 'r3', 'r4']),
  c('a sub-object equals a value', { 'obj.a': { b: 2 } }, ['r2']),
  c('$in below an Object', { 'obj.a.b': { $in: [1, 3] } }, ['r1', 'r3']),
  c('$in with null below an Object', { 'obj.a.b': { $in: [1, null] } }, except('r2', 'r3')),
  c('$nin below an Object', { 'obj.a.b': { $nin: [1] } }, except('r1')),
  c('a date below an Object', { 'obj.seen': { $gte: date('2024-06-01T00:00:00.000Z') } }, ['r2']),
  c('a date below an Object, $ne', { 'obj.seen': { $ne: date('2024-07-01T00:00:00.000Z') } }, except('r2')),
  c('whole-object equality', { obj: { a: { b: 3 }, k: true, nested: { deep: 'z' } } }, ['r3']),
  c('the empty object', { obj: {} }, ['r5']),
  c('$ne an object', { obj: { $ne: {} } }, except('r5')),
  c('$in objects', { obj: { $in: [{}, { c: 'x\u{1F600}' }] } }, ['r5', 'r6']),
  c('a key of mixed types: a string', { 'obj.k': 'one' }, ['r1']),
  c('a key of mixed types: a number', { 'obj.k': 2 }, ['r2']),
  c('a key of mixed types: a boolean', { 'obj.k': true }, ['r3']),
  c('a key of mixed types: $in', { 'obj.k': { $in: ['one', true] } }, ['r1', 'r3']),
  c('$regex below an Object reads strings only', { 'obj.k': { $regex: 'o' } }, ['r1']),
  c('an array below an Object equals a whole array', { 'obj.list': [5, 6] }, ['r1']),
  c('an array below an Object does not mean "contains"', { 'obj.list': 5 }, []),
  c('dot paths do not index arrays', { 'obj.list.0': 5 }, []),
  c('three levels deep', { 'obj.nested.deep': 'z' }, ['r3']),
  c('$all on an array below an Object', { 'obj.list': { $all: [6, 5] } }, ['r1']),
  c('$all on a string below an Object: one element', { 'obj.c': { $all: ['x'] } }, ['r1']),
  c('$all on an object below an Object: one element', { 'obj.a': { $all: [{ b: 1 }] } }, ['r1']),
  c('$containedBy below an Object', { 'obj.c': { $containedBy: ['x', 'y'] } }, except('r6', 'r9')),
  c('$containedBy on an array below an Object', { 'obj.list': { $containedBy: [5] } }, except('r1')),
  c('$in below an Object does not look into arrays', { 'obj.list': { $in: [5] } }, []),
  // Dot paths into an Array field: some element is an object whose key matches (the incumbent's
  // reading); $ne, $nin, $exists: false and null: no element does. Below the element, keys read
  // as below an Object (query/elements.ts).
  c('a dot path into an Array: some element', { 'lines.name': 'x' }, ['r1']),
  c('a dot path into an Array: ordering', { 'lines.qty': { $gt: 4 } }, ['r1', 'r3']),
  c('a dot path into an Array: $ne is no element', { 'lines.name': { $ne: 'x' } }, except('r1')),
  c(
    'a dot path into an Array: null is no element with a value',
    { 'lines.name': null },
    except('r1', 'r2', 'r5'),
  ),
  c('a dot path into an Array: $ne null', { 'lines.name': { $ne: null } }, ['r1', 'r2', 'r5']),
  c('a dot path into an Array: $exists', { 'lines.name': { $exists: true } }, ['r1', 'r2', 'r5']),
  c('a dot path into an Array: $exists false', { 'lines.qty': { $exists: false } }, except('r1', 'r2', 'r3')),
  c('a dot path into an Array: $in', { 'lines.name': { $in: ['y', 'X'] } }, ['r1', 'r2', 'r5']),
  c('a dot path into an Array: $in with null', { 'lines.name': { $in: ['x', null] } }, except('r2', 'r5')),
  c('a dot path into an Array: $nin', { 'lines.name': { $nin: ['y'] } }, except('r1', 'r2')),
  c('a dot path into an Array: $nin with null', { 'lines.name': { $nin: ['y', null] } }, ['r5']),
  c('a dot path into an Array: $regex', { 'lines.name': { $regex: '^x$', $options: 'i' } }, ['r1', 'r5']),
  c(
    'a dot path into an Array: two keys may hold for different elements',
    { 'lines.name': 'x', 'lines.qty': 5 },
    ['r1'],
  ),
  c(
    'a dot path into an Array: a date below an element',
    { 'lines.when': { $gte: date('2024-04-01T00:00:00.000Z') } },
    ['r5'],
  ),
  c('a dot path into an Array: an array below an element is one value', { 'lines.tags': ['a'] }, ['r1']),
  c('a dot path into an Array: no "contains" below an element', { 'lines.tags': 'a' }, []),
  c('a dot path into an Array of objects and scalars', { 'mixed.k': 'v' }, ['r1']),
  c('a dot path into an Array of strings', { 'tags.x': 'a' }, []),
  c(
    'a dot path into an Array within $or and $nor',
    { $or: [{ 'lines.qty': 1 }, { 'lines.qty': 9 }], $nor: [{ 'lines.name': 'y' }] },
    ['r3'],
  ),
  refused(
    'a dot path into an Array: $all is refused',
    { 'lines.name': { $all: ['x'] } },
    'Invalid where: lines.name reaches into the elements of Array field lines; only comparisons, $in, $nin, $exists and $regex read them.',
  ),
  c(
    '$inQuery on an array of strings matches nothing',
    { tags: { $inQuery: { className: 'Person', where: {} } } },
    [],
  ),
  c('$inQuery on an array of mixed values', { mixed: { $inQuery: { className: 'Person', where: {} } } }, []),
  c(
    '$nearSphere below an Object on strings and numbers (no point there)',
    { 'obj.c': { $nearSphere: SF, $maxDistance: 3 } },
    [],
  ),
  c('$nearSphere below an Object orders rows without a point too', { 'obj.c': { $nearSphere: SF } }, [
    'r1',
    'r2',
    'r6',
    'r9',
  ]),
  c('$within below an Object', { 'obj.a': { $within: { $box: [gp(-90, -180), gp(90, 180)] } } }, []),
  c('text order below an Object', { 'obj.c': { $gt: 'x' } }, ['r2', 'r6']),
  c('$regex below an Object', { 'obj.c': { $regex: '^[xy]$' } }, ['r1', 'r2']),
  refused(
    'a key named like a prototype member is refused',
    { 'obj.constructor': { $exists: true } },
    'Invalid where: invalid key name "obj.constructor" (constructor is a reserved name).',
    INVALID_KEY_NAME,
  ),
  // GeoPoint, Polygon, File, Bytes.
  c('GeoPoint equality', { loc: SF }, ['r1']),
  c('GeoPoint $ne', { loc: { $ne: SF } }, except('r1')),
  c('GeoPoint $exists false', { loc: { $exists: false } }, ['r6', 'r7', 'r8', 'r10', 'hidden']),
  c('$nearSphere without a distance: every located row', { loc: { $nearSphere: SF } }, [
    'r1',
    'r2',
    'r3',
    'r4',
    'r5',
    'r9',
  ]),
  c('$nearSphere + $maxDistance (radians)', { loc: { $nearSphere: SF, $maxDistance: 0.01 } }, ['r1', 'r2']),
  c('$nearSphere + $maxDistanceInKilometers', { loc: { $nearSphere: SF, $maxDistanceInKilometers: 600 } }, [
    'r1',
    'r2',
  ]),
  c('$nearSphere + $maxDistanceInMiles', { loc: { $nearSphere: SF, $maxDistanceInMiles: 5 } }, ['r1']),
  c('$nearSphere + $maxDistance 0: the point itself', { loc: { $nearSphere: SF, $maxDistance: 0 } }, ['r1']),
  c('$within.$box', { loc: { $within: { $box: [gp(33, -123), gp(38, -118)] } } }, ['r1', 'r2']),
  c('$within.$box across the antimeridian', { loc: { $within: { $box: [gp(-20, 170), gp(-10, -170)] } } }, [
    'r4',
    'r5',
  ]),
  c('$within.$box edges are inside', { loc: { $within: { $box: [SF, SF] } } }, ['r1']),
  c('$geoWithin.$polygon', { loc: { $geoWithin: { $polygon: BAY_VERTICES } } }, ['r1', 'r2']),
  c('$geoWithin.$polygon as a Polygon', { loc: { $geoWithin: { $polygon: JAPAN } } }, ['r3']),
  c('$geoWithin.$centerSphere', { loc: { $geoWithin: { $centerSphere: [SF, 0.01] } } }, ['r1', 'r2']),
  c(
    '$geoWithin.$centerSphere with a [longitude, latitude] center',
    { loc: { $geoWithin: { $centerSphere: [[139.6503, 35.6762], 0.001] } } },
    ['r3'],
  ),
  c('$geoIntersects.$point inside a polygon', { area: { $geoIntersects: { $point: gp(37.5, -122.5) } } }, [
    'r1',
  ]),
  c('$geoIntersects.$point elsewhere', { area: { $geoIntersects: { $point: gp(0, 0) } } }, []),
  // The boundary is inside: a point on an edge or at a vertex, north and east included.
  c('$geoIntersects.$point on a north edge', { area: { $geoIntersects: { $point: gp(38.5, -122.5) } } }, [
    'r1',
  ]),
  c('$geoIntersects.$point on an east edge', { area: { $geoIntersects: { $point: gp(37.5, -122) } } }, [
    'r1',
  ]),
  c('$geoIntersects.$point at a vertex', { area: { $geoIntersects: { $point: gp(38.5, -122) } } }, ['r1']),
  c(
    '$geoWithin.$polygon with the point at a vertex',
    { loc: { $geoWithin: { $polygon: [gp(36, -124), gp(37.7749, -124), SF] } } },
    ['r1'],
  ),
  c(
    '$geoWithin.$polygon with the point on a north edge',
    { loc: { $geoWithin: { $polygon: [gp(36, -124), gp(37.7749, -124), gp(37.7749, -122), gp(36, -122)] } } },
    ['r1'],
  ),
  c(
    '$within.$box with its north-east corner first',
    { loc: { $within: { $box: [gp(38, -118), gp(33, -123)] } } },
    ['r1', 'r2'],
  ),
  c('Polygon equality', { area: BAY }, ['r1']),
  c('Polygon $exists', { area: { $exists: true } }, ['r1', 'r3']),
  c('File equality compares by name', { file: file('a.txt') }, ['r1']),
  c('File $in', { file: { $in: [file('b.txt', 'http://files/b.txt')] } }, ['r2']),
  c('File $ne', { file: { $ne: file('a.txt') } }, except('r1')),
  c('File $exists', { file: { $exists: true } }, ['r1', 'r2', 'r5']),
  c('Bytes equality', { bytes: bytes('AQI=') }, ['r1']),
  c('Bytes $nin', { bytes: { $nin: [bytes('AQI=')] } }, except('r1')),
  // $regex.
  c('$regex', { s: { $regex: '^al' } }, ['r1', 'hidden']),
  c('$regex is case-sensitive by default', { s: { $regex: '^d' } }, []),
  c('$regex with $options i', { s: { $regex: '^d', $options: 'i' } }, ['r4']),
  c('$options m: ^ after a newline', { s: { $regex: '^line2', $options: 'm' } }, ['r5']),
  c('without m, ^ is the start only', { s: { $regex: '^line2' } }, []),
  c('$options s: . matches a newline', { s: { $regex: 'epsilon.line2', $options: 's' } }, ['r5']),
  c('without s, . does not match a newline', { s: { $regex: 'epsilon.line2' } }, []),
  c('$options x: whitespace and comments ignored', { s: { $regex: '^ al  pha $ # first', $options: 'x' } }, [
    'r1',
    'hidden',
  ]),
  c('several options', { s: { $regex: '^LINE2$', $options: 'im' } }, ['r5']),
  c('$regex never matches rows without the field', { s: { $regex: '.*' } }, except('r6', 'r7')),
  c('$regex special characters are a regex', { s: { $regex: 'a%' } }, []),
  c('. is one code point (RE2 matches by code point: an emoji is one character)', { s: { $regex: '^x.$' } }, [
    'r8',
    'r9',
  ]),
  // Logic.
  c('$or', { $or: [{ n: 1 }, { s: 'gamma' }] }, ['r1', 'r3', 'hidden']),
  c('$and', { $and: [{ n: { $gt: 1 } }, { n: { $lt: 4 } }] }, ['r2', 'r3']),
  c('$nor', { $nor: [{ n: { $in: [1, null] } }, { n: { $gt: 3 } }] }, ['r2', 'r3', 'r8', 'r9']),
  c('$nor of "contains"', { $nor: [{ tags: 'a' }] }, except('r1', 'r5')),
  c('$nor of $exists', { $nor: [{ s: { $exists: true } }] }, ['r6', 'r7']),
  c('$nor of $ne', { $nor: [{ s: { $ne: 'alpha' } }] }, ['r1', 'hidden']),
  c('$or inside $and', { $and: [{ $or: [{ n: 1 }, { n: 2 }] }, { flag: true }] }, ['r1']),
  c('$or beside a field', { $or: [{ n: 1 }, { n: 5.5 }], tags: 'a' }, ['r1', 'r5']),
  c('$nor inside $or', { $or: [{ $nor: [{ n: { $ne: 3 } }] }, { s: 'beta' }] }, ['r2', 'r3']),
  // Fields the class does not have (and the ACL, which is not a queryable field).
  c('equality on a missing field matches nothing', { nope: 'x' }, []),
  c('$ne on a missing field matches everything', { nope: { $ne: 'x' } }, ALL),
  c('null on a missing field matches everything', { nope: null }, ALL),
  c('$exists on a missing field', { nope: { $exists: true } }, []),
  c('$in with only null on a missing field', { nope: { $in: [null] } }, ALL),
  c('$nin with only null on a missing field', { nope: { $nin: [null] } }, []),
  c('$gt on a missing field', { nope: { $gt: 1 } }, []),
  c('$all on a missing field', { nope: { $all: ['x'] } }, []),
  c('$containedBy on a missing field', { nope: { $containedBy: ['x'] } }, ALL),
  c('$regex on a missing field', { nope: { $regex: 'x' } }, []),
  c('$nearSphere on a missing field', { nope: { $nearSphere: SF } }, []),
  c('$geoIntersects on a missing field', { nope: { $geoIntersects: { $point: SF } } }, []),
  c('a dot path into a missing field', { 'nope.a': 1 }, []),
  c('the ACL is not a queryable field', { ACL: { $exists: true } }, []),
  refused(
    'a field named like an Object.prototype member is refused',
    { toString: 'x' },
    'Invalid where: invalid key name "toString" (toString is a reserved name).',
    INVALID_KEY_NAME,
  ),
  refused(
    '$exists on such a field is refused too',
    { constructor: { $exists: false } },
    'Invalid where: invalid key name "constructor" (constructor is a reserved name).',
    INVALID_KEY_NAME,
  ),
  // Refused by both with the same 102.
  // $text: a word of the field (query/text.ts), case and diacritics folded unless told.
  c('$text finds a word', { s: { $text: { $search: { $term: 'alpha' } } } }, ['r1', 'hidden']),
  c('$text folds case', { s: { $text: { $search: { $term: 'DELTA' } } } }, ['r4']),
  c('$text with $caseSensitive', { s: { $text: { $search: { $term: 'Delta', $caseSensitive: true } } } }, [
    'r4',
  ]),
  c(
    '$text with $caseSensitive, other case',
    { s: { $text: { $search: { $term: 'delta', $caseSensitive: true } } } },
    [],
  ),
  c('$text: any of the words', { s: { $text: { $search: { $term: 'gamma line2' } } } }, ['r3', 'r5']),
  c('$text: words end at any non-letter', { s: { $text: { $search: { $term: 'x' } } } }, ['r8', 'r9']),
  c('$text: a stop word finds nothing', { s: { $text: { $search: { $term: 'the' } } } }, []),
  c(
    '$text: no stop words in language none',
    { s: { $text: { $search: { $term: 'alpha', $language: 'none' } } } },
    ['r1', 'hidden'],
  ),
  c('$text below an Object reads strings only', { 'obj.c': { $text: { $search: { $term: 'x' } } } }, [
    'r1',
    'r6',
    'r9',
  ]),
  c('$text on a missing field', { nope: { $text: { $search: { $term: 'x' } } } }, []),
  refused(
    '$text on a Number field',
    { n: { $text: { $search: { $term: '1' } } } },
    'Invalid where: $text needs a String field, n is Number.',
  ),
  refused(
    '$text without $search',
    { s: { $text: { $term: 'x' } } },
    'bad $text: $search, should be object',
    107,
  ),
  refused(
    '$text with an unknown language',
    { s: { $text: { $search: { $term: 'x', $language: 'klingon' } } } },
    'bad $text: $language "klingon" is not supported',
    107,
  ),
  // A Relation field compared with pointers: the rows whose relation holds them (as $relatedTo).
  c('a relation equal to a pointer it holds', { friends: ptr('Person', '{ann}') }, ['r1']),
  c('a relation equal to a pointer it lacks', { friends: ptr('Person', '{bob}') }, []),
  c('a relation equal to a pointer of another class', { friends: ptr('Item', '{ann}') }, []),
  c('a relation $in', { friends: { $in: [ptr('Person', '{bob}'), ptr('Person', '{ann}')] } }, ['r1']),
  c('a relation $ne', { friends: { $ne: ptr('Person', '{ann}') } }, except('r1')),
  c('a relation $nin', { friends: { $nin: [ptr('Person', '{ann}')] } }, except('r1')),
  refused(
    'a relation is not ordered',
    { friends: { $gt: ptr('Person', '{ann}') } },
    'Invalid where: friends is a relation; query it with $relatedTo.',
  ),
  refused(
    '$exists on a relation',
    { friends: { $exists: true } },
    'Invalid where: friends is a relation; query it with $relatedTo.',
  ),
  refused(
    'a dot path into a String',
    { 's.x': 1 },
    'Invalid where: s.x reaches into a String field; only Object fields have sub-keys.',
  ),
  refused(
    '$regex on a Number',
    { n: { $regex: '1' } },
    'Invalid where: $regex needs a String field, n is Number.',
  ),
  refused(
    '$nearSphere on a String',
    { s: { $nearSphere: SF } },
    'Invalid where: geo queries need a GeoPoint field, s is String.',
  ),
  refused(
    '$geoIntersects on a GeoPoint',
    { loc: { $geoIntersects: { $point: SF } } },
    'Invalid where: $geoIntersects needs a Polygon field.',
  ),
  refused(
    '$geoIntersects below an Object',
    { 'obj.a': { $geoIntersects: { $point: SF } } },
    'Invalid where: $geoIntersects needs a Polygon field.',
  ),
  refused(
    '$gt on an Object',
    { obj: { $gt: { a: 1 } } },
    'Invalid where: Object fields can only be compared for equality.',
  ),
  refused(
    '$lt on a GeoPoint',
    { loc: { $lt: SF } },
    'Invalid where: GeoPoint fields can only be compared for equality.',
  ),
  refused(
    '$gt with a whole array',
    { tags: { $gt: ['a'] } },
    'Invalid where: arrays can only be compared for equality.',
  ),
  // Subqueries: the matcher gets them replaced by `in` lists (a store lookup, here with the master key).
  c('$inQuery', { owner: { $inQuery: { className: 'Person', where: { age: { $gt: 25 } } } } }, [
    'r1',
    'r3',
    'r4',
  ]),
  c(
    '$notInQuery (rows without the pointer too)',
    { owner: { $notInQuery: { className: 'Person', where: { age: { $gt: 25 } } } } },
    except('r1', 'r3', 'r4'),
  ),
  c(
    '$inQuery on an array of pointers',
    { refs: { $inQuery: { className: 'Person', where: { name: 'bob' } } } },
    ['r1', 'r2'],
  ),
  c(
    '$select',
    { city: { $select: { query: { className: 'Person', where: { age: { $gt: 25 } } }, key: 'city' } } },
    ['r1', 'r3', 'r4'],
  ),
  c(
    '$dontSelect',
    { city: { $dontSelect: { query: { className: 'Person', where: { name: 'bob' } }, key: 'city' } } },
    except('r2'),
  ),
  c(
    '$select between kinds: a Boolean never equals a Number',
    { flag: { $select: { query: { className: 'Item', where: {} }, key: 'n' } } },
    [],
  ),
  c(
    '$dontSelect between kinds',
    { city: { $dontSelect: { query: { className: 'Item', where: {} }, key: 'n' } } },
    ALL,
  ),
  c(
    '$select of a Number into a key below an Object',
    { 'obj.k': { $select: { query: { className: 'Item', where: {} }, key: 'n' } } },
    ['r2'],
  ),
  c(
    '$select of a key below an Object into a Number',
    { n: { $select: { query: { className: 'Item', where: {} }, key: 'obj.k' } } },
    ['r2'],
  ),
  c(
    '$select of a key below an Object into a String',
    { s: { $select: { query: { className: 'Item', where: {} }, key: 'obj.c' } } },
    ['r9'],
  ),
  c(
    '$select of strings into an Array',
    { mixed: { $select: { query: { className: 'Item', where: {} }, key: 'obj.c' } } },
    ['r1', 'r2'],
  ),
  c(
    '$select of numbers into an Array',
    { nums: { $select: { query: { className: 'Item', where: {} }, key: 'n' } } },
    ['r1', 'r2'],
  ),
  c(
    '$select of objectIds into a Pointer field',
    { owner: { $select: { query: { className: 'Person', where: {} }, key: 'objectId' } } },
    [],
  ),
  c(
    '$select of pointers into a Pointer field',
    { owner: { $select: { query: { className: 'Item', where: { n: 2 } }, key: 'owner' } } },
    ['r2'],
  ),
  c(
    '$select of objects into an Object field',
    { obj: { $select: { query: { className: 'Item', where: { n: 5.5 } }, key: 'obj' } } },
    ['r5'],
  ),
  refused(
    'a $select whose answer cannot matter still refuses its where',
    { s: { $select: { query: { className: 'Item', where: { mixed: { $gt: [5, 6] } } }, key: 'loc' } } },
    'Invalid where: arrays can only be compared for equality.',
  ),
  refused(
    '$inQuery on a missing field still refuses its where',
    { nope: { $inQuery: { className: 'Person', where: { age: { $regex: '1' } } } } },
    'Invalid where: $regex needs a String field, age is Number.',
  ),
  c('$relatedTo', { $relatedTo: { object: ptr('Group', '{g1}'), key: 'items' } }, ['r1', 'r3']),
  c('$relatedTo beside a field', { $relatedTo: { object: ptr('Group', '{g1}'), key: 'items' }, n: 3 }, [
    'r3',
  ]),

  // Values of different kinds, NULL logic and JSON below Objects and in arrays: each case names the
  // SQL pitfall it guards against (SQL answered these otherwise, or with a 500, until the where
  // compiler checked kinds and JSON types).
  // NOT of unknown is unknown: $nor of a comparison with a NULL column must still keep the row.
  c('$nor over a field some rows lack', { $nor: [{ s: 'alpha' }] }, except('r1', 'hidden')),
  // SQLite's column affinity reads "2" as 2 in a REAL column.
  c('a Number field compared with a numeric string', { n: '2' }, []),
  // true is bound as 1.
  c('a Number field compared with true', { n: true }, []),
  // Booleans are stored as 1/0.
  c('a Boolean field compared with 1', { flag: 1 }, []),
  // SQLite orders every number before every text.
  c('$lt between a Number field and a string', { n: { $lt: 'a' } }, []),
  // The number would be compared as the text "5.0" with the ISO text.
  c('$lt between a Date field and a number', { when: { $lt: 5 } }, []),
  // SQLite orders the text "one" after every number.
  c('ordering across types below an Object', { 'obj.k': { $gt: 1 } }, ['r2']),
  // Text and JSON elements sort after every number in SQLite.
  c('ordering across types in an array', { mixed: { $gt: 5 } }, ['r1']),
  // The stored name must not meet any string: a string is not a File.
  c('a File field compared with a plain string', { file: 'a.txt' }, []),
  // A pointer is not reduced to its objectId before a String column sees it.
  c('objectId compared with a pointer', { objectId: ptr('Person', '{r1}') }, []),
  // Array elements compare by objectId and class, as a Pointer field does.
  c('a pointer of another class in an array of pointers', { refs: ptr('Club', '{ann}') }, []),
  // The stored point lacks __type: $in compares coordinates, as equality does.
  c('GeoPoint $in', { loc: { $in: [SF] } }, ['r1']),
  c('Polygon $in', { area: { $in: [BAY] } }, ['r1']),
  // null in $in matches rows without the field on an Array field too (as { tags: null } does).
  c('Array $in with null', { tags: { $in: ['c', null] } }, ['r2', 'r3', 'r6', 'r7', 'r8', 'r9', 'hidden']),
  c('Array $nin with null', { tags: { $nin: ['c', null] } }, ['r1', 'r4', 'r5', 'r10']),
  // json_extract(element, '$.iso') on a string element is malformed JSON: a 500.
  c('a Date in an array that also holds strings', { mixed: date('2024-01-01T00:00:00.000Z') }, ['r3']),
  refused(
    '$all on a String field is refused',
    { s: { $all: ['alpha'] } },
    'Invalid where: $all needs an Array field, s is String.',
  ),
  // json_extract('x', '$.iso') on the string is malformed JSON: a 500.
  c('a Date compared with a string below an Object', { 'obj.c': date('2024-01-01T00:00:00.000Z') }, []),
  // A parameter bound for a value the SQL text does not use: too many parameters, a 500.
  c('$in on a field the class does not have', { nope: { $in: ['x', null] } }, ALL),
  c('$nin on a field the class does not have', { nope: { $nin: ['x'] } }, ALL),
  // The REAL parameter would be turned into the text "1.5" by the column affinity.
  odd('a String field holding a number as text', { s: 1.5 }, []),
  // ISO text puts "+010000-…" before "2025-…"; dates compare by instant.
  odd('a date after the year 9999', { when: { $gt: date('2025-01-01T00:00:00.000Z') } }, ['far']),
  odd('dates before 2025 include years before 0', { when: { $lt: date('2025-01-01T00:00:00.000Z') } }, [
    'plain',
    'ancient',
  ]),
  odd(
    'a range across the year 9999',
    { when: { $gte: date('2024-01-01T00:00:00.000Z'), $lte: date('+010000-01-01T00:00:00.000Z') } },
    ['plain', 'far'],
  ),
  odd('after a date before the year 0', { when: { $gt: date('-000200-01-01T00:00:00.000Z') } }, [
    'plain',
    'far',
    'ancient',
  ]),
  odd('before a date after the year 9999', { when: { $lt: date('+020000-01-01T00:00:00.000Z') } }, [
    'plain',
    'far',
    'ancient',
  ]),
  odd('before a date before the year 0', { when: { $lt: date('-000100-01-01T00:00:00.000Z') } }, []),
  odd('equal to a date before the year 0', { when: date('-000100-06-01T00:00:00.000Z') }, ['ancient']),
  odd(
    'a date after the year 9999 below an Object',
    { 'obj.seen': { $gt: date('2025-01-01T00:00:00.000Z') } },
    ['far'],
  ),
  odd('dates in arrays compare by instant', { mixed: { $lt: date('2025-01-01T00:00:00.000Z') } }, [
    'ancient',
  ]),
  odd(
    'createdAt before a date after the year 9999',
    { createdAt: { $lt: date('+010000-01-01T00:00:00.000Z') } },
    ['plain', 'far', 'ancient', 'null-element', 'one', 'json', 'numeric-text', 'tagged'],
  ),
  odd('a GeoPoint below an Object equals a GeoPoint', { 'obj.a': SF }, ['tagged']),
  odd(
    'a GeoPoint below an Object is a point for $nearSphere',
    { 'obj.a': { $nearSphere: SF, $maxDistance: 0 } },
    ['tagged'],
  ),
  odd('a File below an Object compares by name', { 'obj.c': file('a.txt', 'http://elsewhere/a.txt') }, [
    'tagged',
  ]),
  odd('a pointer below an Object', { 'obj.k': ptr('Person', '{ann}') }, ['tagged']),
  odd('a pointer below an Object is no string', { 'obj.k': '{ann}' }, []),
  odd('a Polygon below an Object equals a Polygon', { 'obj.list': BAY }, ['tagged']),
  odd(
    'tagged elements of an array',
    { mixed: { $all: [SF, file('a.txt'), bytes('AQI='), ptr('Person', '{ann}')] } },
    ['tagged'],
  ),
  // NULL NOT IN (…) is unknown: the null element must count as outside the list.
  odd('$containedBy and a null element', { tags: { $containedBy: ['a'] } }, [
    'plain',
    'far',
    'ancient',
    'one',
    'json',
    'numeric-text',
    'tagged',
  ]),
  // x NOT IN ('b', NULL) is never true.
  odd('$containedBy a list holding null', { tags: { $containedBy: ['b', null] } }, [
    'far',
    'ancient',
    'one',
    'json',
    'numeric-text',
    'tagged',
  ]),
  // json_each reads true as 1.
  odd('a boolean element compared with 1', { mixed: true }, []),
  // json_extract reads true as 1.
  odd('a boolean compared with 1 below an Object', { 'obj.k': true }, []),
  // json_extract answers a sub-object as its JSON text.
  odd('$regex below an Object reads a sub-object as its JSON text', { 'obj.c': { $regex: 'inner' } }, []),
];
