import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Queries with the stock `parse` SDK (v8), unchanged, against the real service (the behaviours its
 * integration suite checks against the incumbent), then the exact answers over REST.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

let t: TestService;

beforeAll(async () => {
  // The SDK suite's classes are made by its saves (the incumbent's default allows that).
  t = await startService({ allowClientClassCreation: true });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  // One attempt: a failure must show up as a failure, not as a slow retry.
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
  const numbers = Array.from({ length: 10 }, (_, i) => new Parse.Object('BoxedNumber', { number: i }));
  await Parse.Object.saveAll(numbers);
});

afterAll(async () => {
  await t?.close();
});

const gp = (latitude: number, longitude: number) => new Parse.GeoPoint(latitude, longitude);

describe('key names, with the stock Parse JS SDK', () => {
  it('a where on a key that names no field is 105 (find and first)', async () => {
    const query = new Parse.Query('BoxedNumber');
    query.equalTo('$foo', 'bar');
    await expect(query.find()).rejects.toMatchObject({ code: Parse.Error.INVALID_KEY_NAME });
    await expect(query.first()).rejects.toMatchObject({ code: Parse.Error.INVALID_KEY_NAME });
  });

  it('ordering by _password is 105', async () => {
    const query = new Parse.Query('BoxedNumber');
    query.ascending('_password');
    await expect(query.find()).rejects.toMatchObject({ code: Parse.Error.INVALID_KEY_NAME });
  });

  it('orders by _created_at and _updated_at, the incumbent names of createdAt and updatedAt', async () => {
    const saved: ParseSDK.Object[] = [];
    for (let i = 0; i < 4; i++) saved.push(await new Parse.Object('Dated', { orderedDate: true, i }).save());
    // Updated in the other order: updatedAt then runs backwards.
    for (const object of [...saved].reverse()) await object.save({ touched: true });
    const byCreated = await new Parse.Query('Dated').ascending('_created_at').find();
    expect(byCreated.map((o) => o.get('i'))).toEqual([0, 1, 2, 3]);
    const byCreatedDesc = await new Parse.Query('Dated').descending('_created_at').find();
    expect(byCreatedDesc.map((o) => o.get('i'))).toEqual([3, 2, 1, 0]);
    const byUpdated = await new Parse.Query('Dated').ascending('_updated_at').find();
    expect(byUpdated.map((o) => o.get('i'))).toEqual([3, 2, 1, 0]);
  });
});

describe('geo queries, with the stock Parse JS SDK', () => {
  const southwestOfSF = gp(37.708813, -122.526398);
  const northeastOfSF = gp(37.822802, -122.373962);

  beforeAll(async () => {
    await Parse.Object.saveAll([
      new Parse.Object('Location', { location: gp(37.776346, -122.394218), name: 'caltrain' }),
      new Parse.Object('Location', { location: gp(37.325635, -121.945753), name: 'santa clara' }),
      // On the north-east corner and the north edge, where plain ray casting says outside.
      new Parse.Object('Location', { location: gp(1, 1), name: 'corner' }),
      new Parse.Object('Location', { location: gp(1, 0.5), name: 'edge' }),
      new Parse.Object('Location', { location: gp(0.5, 0.5), name: 'inside' }),
      new Parse.Object('Location', { location: gp(2, 2), name: 'outside' }),
    ]);
  });

  it('withinGeoBox takes its corners in either order', async () => {
    for (const corners of [
      [southwestOfSF, northeastOfSF],
      [northeastOfSF, southwestOfSF],
    ] as const) {
      const query = new Parse.Query('Location');
      query.withinGeoBox('location', corners[0], corners[1]);
      expect((await query.find()).map((o) => o.get('name'))).toEqual(['caltrain']);
    }
  });

  it('withinPolygon counts a point on an edge or a corner as inside', async () => {
    const query = new Parse.Query('Location');
    query.withinPolygon('location', [gp(0, 0), gp(0, 1), gp(1, 1), gp(1, 0)] as never);
    query.ascending('name');
    expect((await query.find()).map((o) => o.get('name'))).toEqual(['corner', 'edge', 'inside']);
  });

  it('a malformed withinPolygon is 107', async () => {
    for (const points of [1234, [1234], []]) {
      const query = new Parse.Query('Location');
      query.withinPolygon('location', points as never);
      await expect(query.find()).rejects.toMatchObject({ code: Parse.Error.INVALID_JSON });
    }
  });

  it('a saved Polygon comes back closed, and equals its open and closed forms', async () => {
    const openPoints = [
      [0, 0],
      [0, 1],
      [1, 1],
      [1, 0],
    ];
    const closedPoints = [...openPoints, [0, 0]];
    const polygon = new Parse.Polygon(openPoints as never);
    await new Parse.Object('Shape', { polygon }).save();
    for (const form of [openPoints, closedPoints]) {
      const query = new Parse.Query('Shape');
      query.equalTo('polygon', new Parse.Polygon(form as never));
      const results = await query.find();
      expect(results).toHaveLength(1);
      expect(results[0]!.get('polygon').coordinates).toEqual(closedPoints);
    }
  });

  it('polygonContains counts a point on an edge or a corner as inside', async () => {
    await Parse.Object.saveAll([
      new Parse.Object('Area', {
        name: 'unit',
        polygon: new Parse.Polygon([
          [0, 0],
          [0, 1],
          [1, 1],
          [1, 0],
        ]),
      }),
      new Parse.Object('Area', {
        name: 'far',
        polygon: new Parse.Polygon([
          [10, 10],
          [10, 15],
          [15, 15],
          [15, 10],
        ]),
      }),
    ]);
    for (const point of [gp(0.5, 0.5), gp(0, 0), gp(1, 1), gp(0, 0.5), gp(0.5, 1)]) {
      const query = new Parse.Query('Area');
      query.polygonContains('polygon', point);
      expect((await query.find()).map((o) => o.get('name'))).toEqual(['unit']);
    }
    const outside = new Parse.Query('Area');
    outside.polygonContains('polygon', gp(2, 2));
    expect(await outside.find()).toEqual([]);
  });
});

describe('relations and nested operations, with the stock Parse JS SDK', () => {
  let parent: ParseSDK.Object;
  let kids: ParseSDK.Object[];

  beforeAll(async () => {
    kids = [0, 1, 2].map((i) => new Parse.Object('Kid', { i }));
    await Parse.Object.saveAll(kids);
    parent = new Parse.Object('Family', { name: 'first' });
    parent.relation('kids').add([kids[0]!, kids[1]!]);
    await parent.save();
    const other: ParseSDK.Object = new Parse.Object('Family', { name: 'second' });
    other.relation('kids').add(kids[2]!);
    await other.save();
  });

  it('equalTo on a relation field finds the rows whose relation holds the object', async () => {
    const query = new Parse.Query('Family');
    query.equalTo('kids', kids[1]!);
    expect((await query.find()).map((o) => o.get('name'))).toEqual(['first']);
    const none = new Parse.Query('Family');
    none.notEqualTo('kids', kids[2]!);
    expect((await none.find()).map((o) => o.get('name'))).toEqual(['first']);
  });

  it('queries a relation whose target class the SDK does not know (redirectClassNameForKey)', async () => {
    // A bare object: its relation has no target class, so the SDK asks the server to redirect.
    const Family = Parse.Object.extend('Family') as unknown as {
      createWithoutData(id: string): ParseSDK.Object;
    };
    const bare = Family.createWithoutData(parent.id!);
    const query = bare.relation('kids').query();
    query.ascending('i');
    const found = await query.find();
    expect(found.map((o) => [o.className, o.get('i')])).toEqual([
      ['Kid', 0],
      ['Kid', 1],
    ]);
  });

  it('the relation of an unsaved object holds nothing', async () => {
    const unsaved = new Parse.Object('Family');
    expect(await unsaved.relation('kids').query().find()).toEqual([]);
  });

  it('an update answers what its nested operations produced', async () => {
    const object: ParseSDK.Object = new Parse.Object('Nested', { objectField: { number: 10, other: 'x' } });
    await object.save();
    object.increment('objectField.number', 10);
    await object.save();
    expect(object.get('objectField')).toEqual({ number: 20, other: 'x' });
    const fetched = await new Parse.Query('Nested').get(object.id!);
    expect(fetched.get('objectField')).toEqual({ number: 20, other: 'x' });
  });
});

describe('full-text search and distinct, with the stock Parse JS SDK', () => {
  const save = (className: string, field: string, texts: string[]) =>
    Parse.Object.saveAll(texts.map((text) => new Parse.Object(className, { [field]: text })));
  const subjects = [
    'coffee',
    'Coffee Shopping',
    'Baking a cake',
    'baking',
    'Café Con Leche',
    'Сырники',
    'coffee and cream',
    'Cafe con Leche',
  ];

  it('fullText finds the rows holding the word, case-insensitively', async () => {
    await save('FullText', 'subject', subjects);
    const query = new Parse.Query('FullText');
    query.fullText('subject', 'coffee');
    expect((await query.find()).map((o) => o.get('subject')).sort()).toEqual([
      'Coffee Shopping',
      'coffee',
      'coffee and cream',
    ]);
  });

  it('sorts by $score and selects it: the best match first', async () => {
    await save('FullTextScore', 'comment', subjects);
    const query = new Parse.Query('FullTextScore');
    query.fullText('comment', 'coffee');
    query.ascending('$score');
    query.select('$score');
    const results = await query.find();
    expect(results.map((o) => o.get('score'))).toEqual([1, 0.75, 0.75]);
  });

  it('takes a language, case and diacritic options', async () => {
    await save('FullTextOptions', 'comment', [
      'café',
      'loja de café',
      'Preparando um café',
      'preparar',
      'café com leite',
      'Сырники',
      'Preparar café e creme',
      'preparação de cafe com leite',
    ]);
    const find = async (term: string, options: Record<string, unknown>) => {
      const query = new Parse.Query('FullTextOptions');
      query.fullText('comment', term, options);
      return (await query.find()).map((o) => o.get('comment')).sort();
    };
    expect(await find('preparar', { language: 'portuguese' })).toEqual(
      ['preparar', 'Preparar café e creme'].sort(),
    );
    expect(await find('Preparar', { caseSensitive: true })).toEqual(['Preparar café e creme']);
    expect(await find('cafe', { diacriticSensitive: true })).toEqual(['preparação de cafe com leite']);
    expect(await find('cafe', { caseSensitive: true, diacriticSensitive: true })).toEqual([
      'preparação de cafe com leite',
    ]);
    expect(await find('cafe', {})).toHaveLength(6);
    await expect(find('cafe', { language: 'klingon' })).rejects.toMatchObject({
      code: Parse.Error.INVALID_JSON,
    });
  });

  it('distinct answers the distinct values of a field, with the query as where', async () => {
    await Parse.Object.saveAll(
      [
        { name: 'a', n: 1, tags: ['x', 'y'] },
        { name: 'b', n: 2, tags: ['y'] },
        { name: 'a', n: 3 },
      ].map((fields) => new Parse.Object('Distinct', fields)),
    );
    const all = new Parse.Query('Distinct');
    expect(((await all.distinct('name')) as string[]).sort()).toEqual(['a', 'b']);
    expect(((await all.distinct('tags')) as string[]).sort()).toEqual(['x', 'y']);
    const some = new Parse.Query('Distinct');
    some.greaterThan('n', 1);
    expect(((await some.distinct('name')) as string[]).sort()).toEqual(['a', 'b']);
    some.lessThan('n', 3);
    expect(await some.distinct('name')).toEqual(['b']);
  });
});

describe('queries over REST: exact codes and texts', () => {
  const find = (query: Record<string, unknown>, className = 'BoxedNumber') =>
    t.request('GET', `/classes/${className}`, { as: 'master', query });

  it('a where key, an order key or a keys entry that names no field is 105', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ where: { $foo: 1 } }, 'Invalid where: unknown top-level operator $foo.'],
      [
        { where: { _password: 1 } },
        'Invalid where: invalid key name "_password" (field names start with a letter and hold only letters, digits and _).',
      ],
      [
        { where: { $or: [{ 'a-b': 1 }] } },
        'Invalid where: invalid key name "a-b" (field names start with a letter and hold only letters, digits and _).',
      ],
      [{ order: '_password' }, 'Invalid order: "_password".'],
      [{ order: '-$foo' }, 'Invalid order: "-$foo".'],
      [{ keys: '$foo' }, 'Invalid keys: "$foo".'],
      [{ excludeKeys: 'a-b' }, 'Invalid excludeKeys: "a-b".'],
      [{ include: '$foo' }, 'Invalid include: "$foo".'],
    ];
    for (const [query, error] of cases) {
      const res = await find(query);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.json).toEqual({ code: 105, error });
    }
  });

  it('order=_created_at and -_updated_at sort as createdAt and updatedAt', async () => {
    const asc = await find({ order: '_created_at', keys: 'number' });
    const desc = await find({ order: '-_updated_at', keys: 'number' });
    expect(asc.status).toBe(200);
    expect(asc.json.results.map((r: { number: number }) => r.number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(desc.json.results.map((r: { number: number }) => r.number)).toEqual([
      9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ]);
  });

  it('a malformed $geoWithin.$polygon is 107 with a clear text', async () => {
    const cases: Array<[unknown, string]> = [
      [[], 'Invalid where: $geoWithin.$polygon on location takes at least 3 GeoPoints.'],
      ['x', 'Invalid where: $geoWithin.$polygon on location takes at least 3 GeoPoints.'],
      [
        [
          { latitude: 0, longitude: 0 },
          { latitude: 1, longitude: 0 },
          { latitude: 91, longitude: 0 },
        ],
        'Invalid where: location needs a GeoPoint with latitude in [-90, 90] and longitude in [-180, 180].',
      ],
    ];
    for (const [polygon, error] of cases) {
      const res = await find({ where: { location: { $geoWithin: { $polygon: polygon } } } }, 'Location');
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 107, error });
    }
  });

  it('a Polygon is stored with its closing point; one already closed is kept as it is', async () => {
    const open = [
      [5, 5],
      [5, 6],
      [6, 6],
    ];
    const created = await t.request('POST', '/classes/Shape', {
      as: 'master',
      body: { polygon: { __type: 'Polygon', coordinates: open } },
    });
    expect(created.status).toBe(201);
    const got = await t.request('GET', `/classes/Shape/${created.json.objectId}`, { as: 'master' });
    expect(got.json.polygon).toEqual({ __type: 'Polygon', coordinates: [...open, [5, 5]] });
    const closed = await t.request('PUT', `/classes/Shape/${created.json.objectId}`, {
      as: 'master',
      body: { polygon: { __type: 'Polygon', coordinates: [...open, [5, 5]] } },
    });
    expect(closed.status).toBe(200);
    const again = await t.request('GET', `/classes/Shape/${created.json.objectId}`, { as: 'master' });
    expect(again.json.polygon.coordinates).toEqual([...open, [5, 5]]);
  });

  it('a relation field compared with a pointer, and redirectClassNameForKey', async () => {
    const families = await find({ order: 'name' }, 'Family');
    const [first] = families.json.results;
    const kids = await find({ order: 'i' }, 'Kid');
    const kid = (i: number) => ({
      __type: 'Pointer',
      className: 'Kid',
      objectId: kids.json.results[i].objectId,
    });
    const names = async (where: unknown) =>
      (await find({ where, keys: 'name' }, 'Family')).json.results
        .map((r: { name: string }) => r.name)
        .sort();
    expect(await names({ kids: kid(0) })).toEqual(['first']);
    expect(await names({ kids: { $in: [kid(2), kid(0)] } })).toEqual(['first', 'second']);
    expect(await names({ kids: { $nin: [kid(2)] } })).toEqual(['first']);
    expect(
      await names({ kids: { __type: 'Pointer', className: 'Family', objectId: first.objectId } }),
    ).toEqual([]);
    const ordered = await find({ where: { kids: { $gt: kid(0) } } }, 'Family');
    expect(ordered.status).toBe(400);
    expect(ordered.json).toEqual({
      code: 102,
      error: 'Invalid where: kids is a relation; query it with $relatedTo.',
    });

    const related = {
      $relatedTo: {
        object: { __type: 'Pointer', className: 'Family', objectId: first.objectId },
        key: 'kids',
      },
    };
    const redirected = await find(
      { where: related, redirectClassNameForKey: 'kids', order: 'i', keys: 'i' },
      'Family',
    );
    expect(redirected.status).toBe(200);
    expect(redirected.json.results.map((r: { className: string; i: number }) => [r.className, r.i])).toEqual([
      ['Kid', 0],
      ['Kid', 1],
    ]);
    // A key that is not a relation leaves the class as it is.
    const same = await find(
      { redirectClassNameForKey: 'name', where: { name: 'first' }, keys: 'name' },
      'Family',
    );
    expect(same.json.results).toEqual([expect.objectContaining({ name: 'first', className: 'Family' })]);
    const bad = await find({ redirectClassNameForKey: '$x' }, 'Family');
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ code: 105, error: 'Invalid redirectClassNameForKey: "$x".' });
    const unsaved = await find(
      { where: { $relatedTo: { object: { __type: 'Pointer', className: 'Family' }, key: 'kids' } } },
      'Kid',
    );
    expect(unsaved.json).toEqual({ results: [] });
  });

  it('an update answers the results of nested operations; a key below a String is 111 in the incumbent words', async () => {
    const created = await t.request('POST', '/classes/Nested', {
      as: 'master',
      body: { objectField: { number: 10, deep: { x: 1 }, keep: 'k' }, label: 's' },
    });
    const id = created.json.objectId;
    const res = await t.request('PUT', `/classes/Nested/${id}`, {
      as: 'master',
      body: {
        'objectField.number': { __op: 'Increment', amount: 10 },
        'objectField.deep.x': { __op: 'Increment', amount: 2 },
        'objectField.list': { __op: 'Add', objects: [1] },
        'objectField.keep': 'changed',
      },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      updatedAt: res.json.updatedAt,
      objectField: { number: 20, deep: { x: 3 }, list: [1] },
    });
    const nested = await t.request('PUT', `/classes/Nested/${id}`, {
      as: 'master',
      body: { 'label.foo': 1 },
    });
    expect(nested.status).toBe(400);
    expect(nested.json).toEqual({
      code: 111,
      error: 'schema mismatch for Nested.label; expected String but got Object',
    });
  });

  it('$text: order=$score sorts best first either way, keys=$score answers score, texts of refusals', async () => {
    const texts = ['tea', 'tea time', 'tea tea', 'coffee'];
    for (const body of texts.map((body) => ({ body }))) {
      await t.request('POST', '/classes/Tea', { as: 'master', body });
    }
    const where = { body: { $text: { $search: { $term: 'tea' } } } };
    for (const order of ['$score', '-$score']) {
      const res = await find({ where, order, keys: 'body,$score' }, 'Tea');
      expect(res.status, res.text).toBe(200);
      expect(res.json.results.map((r: { body: string; score: number }) => [r.body, r.score])).toEqual([
        ['tea tea', 1.5],
        ['tea', 1],
        ['tea time', 0.75],
      ]);
    }
    const noScore = await find({ where, order: 'body', keys: 'body' }, 'Tea');
    expect(noScore.json.results).toEqual([
      expect.not.objectContaining({ score: expect.anything() }),
      expect.anything(),
      expect.anything(),
    ]);
    const cases: Array<[unknown, number, string]> = [
      [{ $search: 'tea' }, 107, 'bad $text: $search, should be object'],
      [{ $search: { $term: '' } }, 107, 'bad $text: $term, should be string'],
      [{ $search: { $term: 'tea', $language: 7 } }, 107, 'bad $text: $language, should be string'],
      [
        { $search: { $term: 'tea', $caseSensitive: 'yes' } },
        107,
        'bad $text: $caseSensitive, should be boolean',
      ],
      [{ $search: { $term: 'tea', $other: 1 } }, 107, 'bad $text: unknown option $other in $search'],
    ];
    for (const [operand, code, error] of cases) {
      const res = await find({ where: { body: { $text: operand } } }, 'Tea');
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code, error });
    }
  });

  it('distinct: GET and POST, with where; a key naming no field is 105; master only', async () => {
    const get = await t.request('GET', '/aggregate/Distinct', {
      as: 'master',
      query: { distinct: 'name', where: { n: 1 } },
    });
    expect(get.json).toEqual({ results: ['a'] });
    const post = await t.request('POST', '/aggregate/Distinct', {
      as: 'master',
      body: { distinct: 'n', where: { name: 'a' } },
    });
    expect((post.json.results as number[]).sort()).toEqual([1, 3]);
    const none = await t.request('GET', '/aggregate/Distinct', {
      as: 'master',
      query: { distinct: 'nosuch' },
    });
    expect(none.json).toEqual({ results: [] });
    const bad = await t.request('GET', '/aggregate/Distinct', { as: 'master', query: { distinct: '$x' } });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ code: 105, error: 'Invalid field name: $x' });
    const rest = await t.request('GET', '/aggregate/Distinct', { as: 'rest', query: { distinct: 'name' } });
    expect(rest.status).toBe(403);
    expect(rest.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
  });
});
