import { describe, expect, it } from 'vitest';
import { BdsError } from '../src/kernel/errors.ts';
import { EARTH_RADIUS_KM, EARTH_RADIUS_MILES } from '../src/kernel/query.ts';
import { parseWhere } from '../src/query/parse.ts';

/** Runs `fn` and answers the BdsError it throws. */
function failure(fn: () => unknown): BdsError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(BdsError);
    return err as BdsError;
  }
  throw new Error('expected a BdsError');
}

const gp = (latitude: number, longitude: number) => ({ __type: 'GeoPoint', latitude, longitude });

describe('parseWhere: the AST', () => {
  const cases: Array<[string, unknown, unknown]> = [
    ['empty where', {}, { type: 'and', children: [] }],
    ['equality', { a: 1 }, { type: 'compare', path: ['a'], op: 'eq', value: 1 }],
    ['equality with null', { a: null }, { type: 'compare', path: ['a'], op: 'eq', value: null }],
    [
      'several keys make an and',
      { a: 1, b: 'x' },
      {
        type: 'and',
        children: [
          { type: 'compare', path: ['a'], op: 'eq', value: 1 },
          { type: 'compare', path: ['b'], op: 'eq', value: 'x' },
        ],
      },
    ],
    [
      'a dotted key is a path',
      { 'a.b.c': true },
      { type: 'compare', path: ['a', 'b', 'c'], op: 'eq', value: true },
    ],
    [
      'comparison operators on one key',
      { n: { $gt: 1, $lte: 5 } },
      {
        type: 'and',
        children: [
          { type: 'compare', path: ['n'], op: 'gt', value: 1 },
          { type: 'compare', path: ['n'], op: 'lte', value: 5 },
        ],
      },
    ],
    ['$eq', { n: { $eq: 2 } }, { type: 'compare', path: ['n'], op: 'eq', value: 2 }],
    ['$ne', { n: { $ne: 2 } }, { type: 'compare', path: ['n'], op: 'ne', value: 2 }],
    ['$lt', { n: { $lt: 2 } }, { type: 'compare', path: ['n'], op: 'lt', value: 2 }],
    ['$gte', { n: { $gte: 2 } }, { type: 'compare', path: ['n'], op: 'gte', value: 2 }],
    ['$in', { n: { $in: [1, 2] } }, { type: 'in', path: ['n'], values: [1, 2], not: false }],
    ['$nin', { n: { $nin: [1] } }, { type: 'in', path: ['n'], values: [1], not: true }],
    ['$all', { t: { $all: ['a'] } }, { type: 'all', path: ['t'], values: ['a'] }],
    ['$containedBy', { t: { $containedBy: ['a'] } }, { type: 'containedBy', path: ['t'], values: ['a'] }],
    ['$exists', { t: { $exists: false } }, { type: 'exists', path: ['t'], exists: false }],
    ['$regex', { s: { $regex: '^a' } }, { type: 'regex', path: ['s'], source: '^a', flags: '' }],
    [
      '$regex with $options',
      { s: { $regex: 'a', $options: 'im' } },
      { type: 'regex', path: ['s'], source: 'a', flags: 'im' },
    ],
    [
      '$regex with x strips whitespace and comments, keeps classes and escapes',
      { s: { $regex: 'a b [ c]\\ d # comment\n e', $options: 'xi' } },
      { type: 'regex', path: ['s'], source: 'ab[ c]\\ de', flags: 'i' },
    ],
    [
      '$regex with s',
      { s: { $regex: 'a.b', $options: 's' } },
      { type: 'regex', path: ['s'], source: 'a.b', flags: 's' },
    ],
    [
      'a Date value is normalised to ISO with milliseconds in UTC',
      { d: { $gt: { __type: 'Date', iso: '2024-01-01T02:00:00+02:00' } } },
      { type: 'compare', path: ['d'], op: 'gt', value: { __type: 'Date', iso: '2024-01-01T00:00:00.000Z' } },
    ],
    [
      'a pointer value keeps className and objectId',
      { p: { __type: 'Pointer', className: 'A', objectId: 'x', extra: 1 } },
      { type: 'compare', path: ['p'], op: 'eq', value: { __type: 'Pointer', className: 'A', objectId: 'x' } },
    ],
    [
      'an included object (__type Object) compares as its pointer',
      { p: { __type: 'Object', className: 'A', objectId: 'x', name: 'n' } },
      { type: 'compare', path: ['p'], op: 'eq', value: { __type: 'Pointer', className: 'A', objectId: 'x' } },
    ],
    [
      'a plain object value is a value, not operators',
      { o: { a: 1, b: [1, { c: 2 }] } },
      { type: 'compare', path: ['o'], op: 'eq', value: { a: 1, b: [1, { c: 2 }] } },
    ],
    ['an empty object is a value', { o: {} }, { type: 'compare', path: ['o'], op: 'eq', value: {} }],
    [
      '$or',
      { $or: [{ a: 1 }, { b: 2 }] },
      {
        type: 'or',
        children: [
          { type: 'compare', path: ['a'], op: 'eq', value: 1 },
          { type: 'compare', path: ['b'], op: 'eq', value: 2 },
        ],
      },
    ],
    [
      '$and',
      { $and: [{ a: 1 }] },
      { type: 'and', children: [{ type: 'compare', path: ['a'], op: 'eq', value: 1 }] },
    ],
    [
      '$nor',
      { $nor: [{ a: 1 }] },
      { type: 'nor', children: [{ type: 'compare', path: ['a'], op: 'eq', value: 1 }] },
    ],
    [
      '$relatedTo',
      { $relatedTo: { object: { __type: 'Pointer', className: 'Team', objectId: 't1' }, key: 'members' } },
      { type: 'relatedTo', owner: { className: 'Team', objectId: 't1' }, key: 'members' },
    ],
    [
      '$inQuery',
      { p: { $inQuery: { className: 'A', where: { n: 1 } } } },
      {
        type: 'inQuery',
        path: ['p'],
        query: { className: 'A', where: { type: 'compare', path: ['n'], op: 'eq', value: 1 } },
        not: false,
      },
    ],
    [
      '$notInQuery without a where matches the whole class',
      { p: { $notInQuery: { className: 'A' } } },
      {
        type: 'inQuery',
        path: ['p'],
        query: { className: 'A', where: { type: 'and', children: [] } },
        not: true,
      },
    ],
    [
      '$select',
      { c: { $select: { query: { className: 'A', where: {} }, key: 'city' } } },
      {
        type: 'select',
        path: ['c'],
        query: { className: 'A', where: { type: 'and', children: [] } },
        key: 'city',
        not: false,
      },
    ],
    [
      '$dontSelect',
      { c: { $dontSelect: { query: { className: 'A' }, key: 'x.y' } } },
      {
        type: 'select',
        path: ['c'],
        query: { className: 'A', where: { type: 'and', children: [] } },
        key: 'x.y',
        not: true,
      },
    ],
    [
      '$nearSphere without a distance',
      { loc: { $nearSphere: gp(1, 2) } },
      { type: 'nearSphere', path: ['loc'], point: { latitude: 1, longitude: 2 } },
    ],
    [
      '$nearSphere + $maxDistance (radians)',
      { loc: { $nearSphere: gp(1, 2), $maxDistance: 0.5 } },
      { type: 'nearSphere', path: ['loc'], point: { latitude: 1, longitude: 2 }, maxDistance: 0.5 },
    ],
    [
      '$nearSphere + $maxDistanceInRadians',
      { loc: { $nearSphere: gp(1, 2), $maxDistanceInRadians: 0.25 } },
      { type: 'nearSphere', path: ['loc'], point: { latitude: 1, longitude: 2 }, maxDistance: 0.25 },
    ],
    [
      '$within.$box',
      { loc: { $within: { $box: [gp(0, 0), gp(1, 1)] } } },
      {
        type: 'withinBox',
        path: ['loc'],
        southwest: { latitude: 0, longitude: 0 },
        northeast: { latitude: 1, longitude: 1 },
      },
    ],
    [
      '$geoWithin.$polygon of GeoPoints',
      { loc: { $geoWithin: { $polygon: [gp(0, 0), gp(0, 1), gp(1, 1)] } } },
      {
        type: 'withinPolygon',
        path: ['loc'],
        polygon: [
          { latitude: 0, longitude: 0 },
          { latitude: 0, longitude: 1 },
          { latitude: 1, longitude: 1 },
        ],
      },
    ],
    [
      '$geoWithin.$polygon of a Polygon value ([lat, lng] pairs)',
      {
        loc: {
          $geoWithin: {
            $polygon: {
              __type: 'Polygon',
              coordinates: [
                [0, 0],
                [0, 1],
                [1, 1],
              ],
            },
          },
        },
      },
      {
        type: 'withinPolygon',
        path: ['loc'],
        polygon: [
          { latitude: 0, longitude: 0 },
          { latitude: 0, longitude: 1 },
          { latitude: 1, longitude: 1 },
        ],
      },
    ],
    [
      '$geoWithin.$centerSphere with a GeoPoint',
      { loc: { $geoWithin: { $centerSphere: [gp(1, 2), 0.1] } } },
      { type: 'withinCenterSphere', path: ['loc'], center: { latitude: 1, longitude: 2 }, radius: 0.1 },
    ],
    [
      '$geoWithin.$centerSphere with [longitude, latitude]',
      { loc: { $geoWithin: { $centerSphere: [[2, 1], 0.1] } } },
      { type: 'withinCenterSphere', path: ['loc'], center: { latitude: 1, longitude: 2 }, radius: 0.1 },
    ],
    [
      '$geoIntersects.$point',
      { area: { $geoIntersects: { $point: gp(1, 2) } } },
      { type: 'intersectsPoint', path: ['area'], point: { latitude: 1, longitude: 2 } },
    ],
  ];
  for (const [name, where, ast] of cases) {
    it(name, () => {
      expect(parseWhere(where)).toEqual(ast);
    });
  }

  it('$maxDistanceInKilometers and $maxDistanceInMiles become radians', () => {
    const km = parseWhere({ loc: { $nearSphere: gp(0, 0), $maxDistanceInKilometers: 100 } }) as {
      maxDistance: number;
    };
    expect(km.maxDistance).toBeCloseTo(100 / EARTH_RADIUS_KM, 12);
    const mi = parseWhere({ loc: { $nearSphere: gp(0, 0), $maxDistanceInMiles: 100 } }) as {
      maxDistance: number;
    };
    expect(mi.maxDistance).toBeCloseTo(100 / EARTH_RADIUS_MILES, 12);
  });
});

describe('parseWhere: errors are 102 with a clear text (105 for a key naming no field, 107 for a malformed polygon)', () => {
  const cases: Array<[string, unknown, string, number?]> = [
    ['not an object', [], 'Invalid where: it must be a JSON object.'],
    ['null', null, 'must be a JSON object'],
    ['a string', 'a', 'must be a JSON object'],
    ['an unknown top-level operator', { $where: 'x' }, 'unknown top-level operator $where', 105],
    ['an unknown field operator', { a: { $near: 1 } }, 'unknown operator $near on a'],
    ['a bad key', { 'a-b': 1 }, 'invalid key name "a-b"', 105],
    ['a key starting with a digit', { '1a': 1 }, 'invalid key name', 105],
    ['operators mixed with keys', { a: { $gt: 1, b: 1 } }, 'operators cannot be mixed with plain keys'],
    ['an operator inside a value', { a: { b: { $gt: 1 } } }, 'unexpected operator $gt inside a value of a'],
    ['a non-finite number', { a: { $gt: Number.POSITIVE_INFINITY } }, 'Invalid where'],
    ['$in not an array', { a: { $in: 'x' } }, '$in on a takes an array'],
    ['$nin not an array', { a: { $nin: {} } }, '$nin on a takes an array'],
    ['$containedBy not an array', { a: { $containedBy: 1 } }, '$containedBy on a takes an array'],
    ['$exists not a boolean', { a: { $exists: 'yes' } }, '$exists on a takes a boolean'],
    ['$or empty', { $or: [] }, '$or takes a non-empty array'],
    ['$or member not an object', { $or: [1] }, 'every $or member must be an object'],
    ['$nor not an array', { $nor: {} }, '$nor takes a non-empty array'],
    ['$regex not a string', { a: { $regex: /x/ } }, '$regex on a takes a string'],
    ['$regex invalid', { a: { $regex: '(' } }, '$regex on a is not a valid regular expression'],
    ['$regex invalid quantifier', { a: { $regex: '*a' } }, 'not a valid regular expression'],
    [
      '$options with an unknown flag',
      { a: { $regex: 'x', $options: 'u' } },
      'may only hold the flags i, m, x and s',
    ],
    ['$options not a string', { a: { $regex: 'x', $options: 1 } }, 'may only hold the flags'],
    ['$options alone', { a: { $options: 'i' } }, '$options on a needs $regex'],
    [
      '$relatedTo not an object',
      { $relatedTo: 1 },
      '$relatedTo takes {object: <pointer>, key: <relation field>}',
    ],
    [
      '$relatedTo bad key',
      { $relatedTo: { object: { className: 'A', objectId: 'x' }, key: 'a.b' } },
      '$relatedTo key',
      105,
    ],
    [
      '$relatedTo bad pointer',
      { $relatedTo: { object: { className: 'A', objectId: 7 }, key: 'k' } },
      'malformed pointer',
    ],
    ['$inQuery not an object', { p: { $inQuery: 1 } }, '$inQuery on p takes {className, where}'],
    [
      '$inQuery with a bad where',
      { p: { $inQuery: { className: 'A', where: [] } } },
      'must be a JSON object',
    ],
    [
      '$select without key',
      { p: { $select: { query: { className: 'A' } } } },
      '$select on p takes {query: {className, where}, key}',
    ],
    [
      '$select bad key',
      { p: { $select: { query: { className: 'A' }, key: 'a b' } } },
      '$select key "a b"',
      105,
    ],
    ['a bad Date', { d: { __type: 'Date', iso: 'not a date' } }, 'has a Date with a bad iso value'],
    ['a bad pointer', { p: { __type: 'Pointer', objectId: 'x' } }, 'has a malformed pointer'],
    ['a File without a name', { f: { __type: 'File' } }, 'has a File without a name'],
    ['Bytes without base64', { b: { __type: 'Bytes' } }, 'has Bytes without base64'],
    ['a bad Polygon', { b: { __type: 'Polygon', coordinates: [[0, 0]] } }, 'has a Polygon'],
    ['an unknown __type', { b: { __type: 'Relation', className: 'A' } }, 'unsupported __type "Relation"'],
    [
      '$nearSphere with a bad point',
      { l: { $nearSphere: { latitude: 'x', longitude: 0 } } },
      'needs a GeoPoint',
    ],
    ['$nearSphere latitude out of range', { l: { $nearSphere: gp(-91, 0) } }, 'latitude in [-90, 90]'],
    ['$maxDistance without $nearSphere', { l: { $maxDistance: 1 } }, '$maxDistance on l needs $nearSphere'],
    [
      '$maxDistanceInMiles negative',
      { l: { $nearSphere: gp(0, 0), $maxDistanceInMiles: -2 } },
      'takes a number >= 0',
    ],
    ['$within without $box', { l: { $within: {} } }, '$within on l takes {$box: [southwest, northeast]}'],
    ['$geoWithin empty', { l: { $geoWithin: {} } }, '$geoWithin on l takes $polygon or $centerSphere'],
    [
      '$polygon too short',
      { l: { $geoWithin: { $polygon: [gp(0, 0), gp(1, 1)] } } },
      'at least 3 GeoPoints',
      107,
    ],
    [
      '$centerSphere negative radius',
      { l: { $geoWithin: { $centerSphere: [gp(0, 0), -1] } } },
      '$centerSphere',
    ],
    [
      '$geoIntersects without $point',
      { l: { $geoIntersects: { $polygon: [] } } },
      'takes {$point: GeoPoint}',
    ],
  ];
  for (const [name, where, text, code = 102] of cases) {
    it(name, () => {
      const err = failure(() => parseWhere(where));
      expect(err.code).toBe(code);
      expect(err.message).toContain(text);
    });
  }

  it('an invalid class name in a subquery is 103', () => {
    const err = failure(() => parseWhere({ p: { $inQuery: { className: '1bad', where: {} } } }));
    expect(err.code).toBe(103);
  });
});

describe('parseWhere: requestComplexity limits', () => {
  const nestOr = (depth: number): Record<string, unknown> => {
    let w: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < depth; i++) w = { $or: [w] };
    return w;
  };
  const nestIn = (depth: number): Record<string, unknown> => {
    let w: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < depth; i++) w = { p: { $inQuery: { className: 'A', where: w } } };
    return w;
  };

  it('queryDepth counts nested $and/$or/$nor', () => {
    expect(() => parseWhere(nestOr(3), { queryDepth: 3 })).not.toThrow();
    const err = failure(() => parseWhere(nestOr(4), { queryDepth: 3 }));
    expect(err.code).toBe(102);
    expect(err.message).toBe('Query condition nesting depth of 4 exceeds the maximum of 3.');
  });

  it('queryDepth counts the nesting, not the number of siblings', () => {
    const wide = { $or: Array.from({ length: 50 }, (_, i) => ({ a: i })) };
    expect(() => parseWhere(wide, { queryDepth: 1 })).not.toThrow();
    expect(() =>
      parseWhere({ $and: [{ $or: [{ a: 1 }] }, { $nor: [{ b: 1 }] }] }, { queryDepth: 2 }),
    ).not.toThrow();
  });

  it('subqueryDepth counts nested $inQuery/$notInQuery/$select/$dontSelect', () => {
    expect(() => parseWhere(nestIn(2), { subqueryDepth: 2 })).not.toThrow();
    const err = failure(() => parseWhere(nestIn(3), { subqueryDepth: 2 }));
    expect(err.code).toBe(102);
    expect(err.message).toBe('Subquery depth of 3 exceeds the maximum of 2.');
    const mixed = {
      a: {
        $dontSelect: {
          key: 'k',
          query: { className: 'A', where: { b: { $notInQuery: { className: 'B', where: {} } } } },
        },
      },
    };
    expect(failure(() => parseWhere(mixed, { subqueryDepth: 1 })).message).toBe(
      'Subquery depth of 2 exceeds the maximum of 1.',
    );
  });

  it('-1 and undefined remove the limits', () => {
    expect(() => parseWhere(nestOr(50), { queryDepth: -1, subqueryDepth: -1 })).not.toThrow();
    expect(() => parseWhere(nestIn(50), { queryDepth: -1, subqueryDepth: -1 })).not.toThrow();
    expect(() => parseWhere(nestOr(50))).not.toThrow();
  });

  it('a limit of 0 forbids any nesting', () => {
    expect(failure(() => parseWhere({ $or: [{ a: 1 }] }, { queryDepth: 0 })).message).toBe(
      'Query condition nesting depth of 1 exceeds the maximum of 0.',
    );
    expect(failure(() => parseWhere(nestIn(1), { subqueryDepth: 0 })).message).toBe(
      'Subquery depth of 1 exceeds the maximum of 0.',
    );
  });
});
