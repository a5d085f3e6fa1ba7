import { RE2JSSyntaxException } from 're2js';
import { describe, expect, it } from 'vitest';
import { BdsError } from '../src/kernel/errors.ts';
import type { QueryNode } from '../src/kernel/query.ts';
import type { ClassSchema, FieldDef } from '../src/kernel/schema.ts';
import { distanceRadians, pointInBox } from '../src/query/geo.ts';
import {
  compareCodePoints,
  compileMatcher,
  replaceNodes,
  unresolvedNodes,
  type WireRow,
} from '../src/query/match.ts';
import { parseWhere } from '../src/query/parse.ts';
import { prepareRegex, regexTest, regexTester } from '../src/query/regex.ts';

/**
 * The matcher's own edge cases, without a service. Its agreement with SQL is proven by
 * query-cases.test.ts; these pin what only the matcher can get wrong: reading wire rows (own
 * properties only, system dates as strings, values that do not fit the schema), the unresolved
 * nodes, and the pieces it shares with storage (regex.ts, geo.ts).
 */

function schema(fields: Record<string, FieldDef>): ClassSchema {
  return { className: 'T', fields, classLevelPermissions: {}, indexes: {} };
}

const SCHEMA = schema({
  s: { type: 'String' },
  n: { type: 'Number' },
  when: { type: 'Date' },
  owner: { type: 'Pointer', targetClass: 'Person' },
  tags: { type: 'Array' },
  obj: { type: 'Object' },
  loc: { type: 'GeoPoint' },
  friends: { type: 'Relation', targetClass: 'Person' },
  // A class may have a field named like an Object.prototype member.
  constructor: { type: 'String' as const },
});

const matches = (where: unknown, row: WireRow, s: ClassSchema = SCHEMA) =>
  compileMatcher(parseWhere(where), s)(row);

const date = (iso: string) => ({ __type: 'Date', iso });
const ptr = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });
const gp = (latitude: number, longitude: number) => ({ __type: 'GeoPoint', latitude, longitude });

describe('compileMatcher: reading wire rows', () => {
  it('createdAt and updatedAt are ISO strings in a row and still compare as dates', () => {
    const row = {
      objectId: 'a',
      createdAt: '2024-05-01T10:00:00.000Z',
      updatedAt: '2024-05-02T10:00:00.000Z',
    };
    expect(matches({ createdAt: { $lt: date('2024-05-01T12:00:00+01:00') } }, row)).toBe(true);
    expect(matches({ createdAt: { $lt: date('2024-05-01T10:30:00+01:00') } }, row)).toBe(false);
    expect(matches({ updatedAt: '2024-05-02T12:00:00+02:00' }, row)).toBe(true);
  });

  it('dates compare by instant, also after the year 9999 and before year 0', () => {
    const far = { when: date('+010000-01-01T00:00:00.000Z') };
    const old = { when: date('-000100-01-01T00:00:00.000Z') };
    const after2025 = { when: { $gt: date('2025-01-01T00:00:00.000Z') } };
    expect(matches(after2025, far)).toBe(true);
    expect(matches(after2025, old)).toBe(false);
    expect(matches({ when: { $lt: date('0000-01-01T00:00:00.000Z') } }, old)).toBe(true);
  });

  it('a row date written with an offset equals the same instant in UTC', () => {
    expect(matches({ when: date('2024-01-01T00:00:00Z') }, { when: date('2024-01-01T02:00:00+02:00') })).toBe(
      true,
    );
  });

  it('reads own properties only: a key below a field named like a prototype member is not found', () => {
    // Such names are refused by the parser (the one naming rule); the matcher, given one anyway, reads own keys.
    const obj = {
      className: 'Q',
      fields: { obj: { type: 'Object' as const } },
      classLevelPermissions: {},
      indexes: {},
    };
    const exists = (key: string) => compileMatcher({ type: 'exists', path: ['obj', key], exists: true }, obj);
    expect(exists('toString')({ obj: {} })).toBe(false);
    expect(exists('__proto__')({ obj: JSON.parse('{"__proto__": 1}') })).toBe(true);
  });

  it('a dot path walks objects only: no array indexes, no keys of strings', () => {
    expect(matches({ 'obj.list.0': 5 }, { obj: { list: [5] } })).toBe(false);
    expect(matches({ 'obj.list.0': 5 }, { obj: { list: { '0': 5 } } })).toBe(true);
    expect(matches({ 'obj.s.length': 1 }, { obj: { s: 'x' } })).toBe(false);
  });

  it('a value that does not fit the schema (a stale row) never matches and never throws', () => {
    expect(matches({ n: { $gt: 1 } }, { n: '5' })).toBe(false);
    expect(matches({ n: { $ne: 5 } }, { n: '5' })).toBe(true);
    expect(matches({ when: { $lt: date('2030-01-01T00:00:00Z') } }, { when: 'not a date' })).toBe(false);
    expect(matches({ tags: 'a' }, { tags: 'a' })).toBe(true);
    expect(matches({ loc: { $nearSphere: gp(0, 0), $maxDistance: 1 } }, { loc: 'here' })).toBe(false);
  });

  it('the ACL and fields the schema does not have are ignored, even when the row holds them', () => {
    const row = { ACL: { '*': { read: true } }, extra: 'x' };
    expect(matches({ ACL: { $exists: true } }, row)).toBe(false);
    expect(matches({ extra: 'x' }, row)).toBe(false);
    expect(matches({ extra: { $ne: 'x' } }, row)).toBe(true);
  });

  it('a pointer matches by class and objectId', () => {
    const row = { owner: ptr('Person', 'p1') };
    expect(matches({ owner: ptr('Person', 'p1') }, row)).toBe(true);
    expect(matches({ owner: ptr('Club', 'p1') }, row)).toBe(false);
    expect(matches({ owner: 'p1' }, row)).toBe(false);
    expect(matches({ tags: ptr('Club', 'p1') }, { tags: [ptr('Person', 'p1')] })).toBe(false);
  });

  it('strings never equal numbers, booleans never equal 0 or 1, and values of different types have no order', () => {
    expect(matches({ s: 1 }, { s: '1' })).toBe(false);
    expect(matches({ n: '1' }, { n: 1 })).toBe(false);
    expect(matches({ 'obj.k': true }, { obj: { k: 1 } })).toBe(false);
    expect(matches({ tags: 0 }, { tags: [false] })).toBe(false);
    expect(matches({ 'obj.k': { $gt: 1 } }, { obj: { k: 'one' } })).toBe(false);
    expect(matches({ 'obj.k': { $lt: 'a' } }, { obj: { k: 1 } })).toBe(false);
  });

  it('does not change the row', () => {
    const row = Object.freeze({ tags: Object.freeze(['a', 'b']), obj: Object.freeze({ a: 1 }) });
    expect(matches({ tags: { $all: ['a'] }, obj: { a: 1 }, 'obj.a': { $gte: 1 } }, row)).toBe(true);
  });

  it('an and without children matches every row, an or without children none', () => {
    expect(compileMatcher({ type: 'and', children: [] }, SCHEMA)({})).toBe(true);
    expect(compileMatcher({ type: 'or', children: [] }, SCHEMA)({})).toBe(false);
    expect(compileMatcher({ type: 'nor', children: [] }, SCHEMA)({})).toBe(true);
  });

  it('$nor of a comparison keeps rows without the field, as $ne does', () => {
    expect(matches({ $nor: [{ s: 'x' }] }, {})).toBe(true);
    expect(matches({ s: { $ne: 'x' } }, {})).toBe(true);
    expect(matches({ $nor: [{ s: 'x' }] }, { s: 'x' })).toBe(false);
  });
});

describe('compileMatcher: refusals happen once, when compiling', () => {
  it.each([
    [{ friends: ptr('Person', 'p') }, 'Invalid where: friends is a relation; query it with $relatedTo.'],
    [{ 's.x': 1 }, 'Invalid where: s.x reaches into a String field; only Object fields have sub-keys.'],
    [{ n: { $regex: 'a' } }, 'Invalid where: $regex needs a String field, n is Number.'],
    [
      { s: { $within: { $box: [gp(0, 0), gp(1, 1)] } } },
      'Invalid where: geo queries need a GeoPoint field, s is String.',
    ],
    [
      { loc: { $geoIntersects: { $point: gp(0, 0) } } },
      'Invalid where: $geoIntersects needs a Polygon field.',
    ],
    [{ loc: { $gte: gp(0, 0) } }, 'Invalid where: GeoPoint fields can only be compared for equality.'],
    [{ tags: { $lt: ['a'] } }, 'Invalid where: arrays can only be compared for equality.'],
  ])('%j is a 102', (where, message) => {
    const ast = parseWhere(where);
    let thrown: unknown;
    try {
      compileMatcher({ type: 'or', children: [parseWhere({ s: 'x' }), ast] }, SCHEMA);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(BdsError);
    expect((thrown as BdsError).code).toBe(102);
    expect((thrown as BdsError).message).toBe(message);
  });
});

describe('unresolved nodes: subqueries and $relatedTo', () => {
  const where = {
    $or: [
      {
        owner: {
          $inQuery: {
            className: 'Person',
            where: { city: { $select: { query: { className: 'C' }, key: 'x' } } },
          },
        },
      },
      { $nor: [{ s: { $dontSelect: { query: { className: 'Person', where: {} }, key: 'name' } } }] },
    ],
    $relatedTo: { object: ptr('Group', 'g1'), key: 'members' },
    n: 1,
  };

  it('are listed wherever they sit, without entering their own subqueries', () => {
    const listed = unresolvedNodes(parseWhere(where));
    expect(listed.map((n) => n.type)).toEqual(['inQuery', 'select', 'relatedTo']);
    expect(listed[0]).toMatchObject({ type: 'inQuery', path: ['owner'], not: false });
    expect(listed[1]).toMatchObject({ type: 'select', path: ['s'], key: 'name', not: true });
    expect(unresolvedNodes(parseWhere({ n: 1, s: { $in: ['a'] } }))).toEqual([]);
  });

  it('compileMatcher refuses them with a text that names the operator and the field', () => {
    expect(() =>
      compileMatcher(parseWhere({ n: 1, owner: { $notInQuery: { className: 'Person' } } }), SCHEMA),
    ).toThrow(
      'compileMatcher: $notInQuery on owner cannot be decided for one row in memory; replace it by an `in` list from a store lookup first (unresolvedNodes, replaceNodes).',
    );
    expect(() =>
      compileMatcher(parseWhere({ $relatedTo: { object: ptr('Group', 'g1'), key: 'members' } }), SCHEMA),
    ).toThrow('compileMatcher: $relatedTo Group.members cannot be decided');
    expect(() =>
      compileMatcher(parseWhere({ s: { $select: { query: { className: 'P' }, key: 'k' } } }), SCHEMA),
    ).toThrow('compileMatcher: $select on s cannot be decided');
  });

  it('replaceNodes puts the looked-up lists in their place, and the result compiles', () => {
    const answers = new Map<QueryNode, QueryNode>();
    const ast = parseWhere(where);
    for (const node of unresolvedNodes(ast)) {
      const replacement: QueryNode =
        node.type === 'relatedTo'
          ? { type: 'in', path: ['objectId'], values: ['row1'], not: false }
          : node.type === 'inQuery'
            ? { type: 'in', path: node.path, values: [ptr('Person', 'p1')], not: node.not }
            : { type: 'in', path: node.path, values: ['ann'], not: node.not };
      answers.set(node, replacement);
    }
    const resolved = replaceNodes(ast, (node) => answers.get(node)!);
    expect(unresolvedNodes(resolved)).toEqual([]);
    const match = compileMatcher(resolved, SCHEMA);
    expect(match({ objectId: 'row1', n: 1, owner: ptr('Person', 'p1') })).toBe(true);
    expect(match({ objectId: 'row1', n: 1, s: 'bob' })).toBe(false);
    expect(match({ objectId: 'row1', n: 1, s: 'ann' })).toBe(true);
    expect(match({ objectId: 'row2', n: 1, owner: ptr('Person', 'p1') })).toBe(false);
  });
});

describe('compareCodePoints: text order is code point order', () => {
  it.each([
    ['a', 'b', -1],
    ['B', 'a', -1],
    ['ab', 'a', 1],
    ['', 'a', -1],
    ['x', 'x', 0],
    ['\uFFFD', '\u{1F600}', -1],
    ['\u{1F600}', '\uE000', 1],
    ['\u{1F600}', '\u{1F601}', -1],
    ['\u{10000}', '\u{10FFFF}', -1],
  ])('%j vs %j', (a, b, sign) => {
    expect(Math.sign(compareCodePoints(a, b))).toBe(sign);
    expect(Math.sign(compareCodePoints(b, a))).toBe(0 - sign);
  });

  it('agrees with sorting by UTF-8 bytes', () => {
    const words = ['z', '\uFFFD', '\u{1F600}', 'é', 'e', '\uD7FF', '\uE000', '\u{10000}', 'Z', ''];
    const byBytes = [...words].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect([...words].sort(compareCodePoints)).toEqual(byBytes);
  });
});

describe('regex.ts: the one regex engine', () => {
  it('applies x (whitespace and # comments) and keeps each other flag once', () => {
    expect(prepareRegex('^ a [ ]b # note\n c$', 'xii')).toEqual({ source: '^a[ ]bc$', flags: 'i' });
    expect(prepareRegex('a b', 'ms')).toEqual({ source: 'a b', flags: 'ms' });
  });

  it('throws the engine error for a pattern it cannot compile', () => {
    expect(() => prepareRegex('(', '')).toThrow(RE2JSSyntaxException);
    // RE2 runs in linear time: it has no backreferences or lookaround.
    expect(() => prepareRegex('(a)\\1', '')).toThrow(RE2JSSyntaxException);
    expect(() => prepareRegex('a(?=b)', '')).toThrow(RE2JSSyntaxException);
  });

  it('regexTest and a compiled tester agree, and anything but a string never matches', () => {
    const test = regexTester('^a.c$', 's');
    for (const value of ['abc', 'a\nc', 'ABC', 'abcd', 1, null, undefined, ['abc'], { a: 'abc' }]) {
      expect(test(value)).toBe(regexTest('^a.c$', 's', value));
    }
    expect(test('a\nc')).toBe(true);
    expect(test(['abc'])).toBe(false);
  });

  it('a stateful flag would not carry state from one test to the next', () => {
    const test = regexTester('a', 'g');
    expect([test('a'), test('a'), test('a')]).toEqual([true, true, true]);
  });
});

describe('geo.ts: the shared geometry', () => {
  it('a box across the antimeridian holds both sides and not the middle', () => {
    const sw = { latitude: -20, longitude: 170 };
    const ne = { latitude: -10, longitude: -170 };
    expect(pointInBox(-15, 179.9, sw, ne)).toBe(true);
    expect(pointInBox(-15, -175, sw, ne)).toBe(true);
    expect(pointInBox(-15, 0, sw, ne)).toBe(false);
    expect(pointInBox(-25, 179.9, sw, ne)).toBe(false);
  });

  it('box edges are inside', () => {
    const corner = { latitude: 1, longitude: 2 };
    expect(pointInBox(1, 2, corner, corner)).toBe(true);
  });

  it('$nearSphere with $maxDistance keeps a point exactly at that distance', () => {
    const d = distanceRadians(10, 20, 11, 21);
    const where = { loc: { $nearSphere: gp(11, 21), $maxDistance: d } };
    expect(matches(where, { loc: gp(10, 20) })).toBe(true);
    expect(
      matches({ loc: { $nearSphere: gp(11, 21), $maxDistance: d * 0.999999 } }, { loc: gp(10, 20) }),
    ).toBe(false);
  });
});

describe('compileMatcher: the acl node (built by access/, decided by kernel/acl.ts)', () => {
  const readable = (principals: string[]) =>
    compileMatcher({ type: 'acl', access: 'read', principals }, SCHEMA);

  it('a row without an ACL is public, an empty ACL is for the master key only', () => {
    expect(readable(['*'])({})).toBe(true);
    expect(readable([])({})).toBe(true);
    expect(readable(['*', 'u1'])({ ACL: {} })).toBe(false);
  });

  it('one granted principal is enough, and write access is not read access', () => {
    const row = { ACL: { u1: { read: true }, 'role:staff': { write: true } } };
    expect(readable(['*', 'u1'])(row)).toBe(true);
    expect(readable(['*', 'role:staff'])(row)).toBe(false);
    expect(compileMatcher({ type: 'acl', access: 'write', principals: ['role:staff'] }, SCHEMA)(row)).toBe(
      true,
    );
  });
});
