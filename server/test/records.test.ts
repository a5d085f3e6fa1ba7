import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenarios, type Scenario, type ScenarioContext } from './helpers/scenarios.ts';
import { startService, type TestService } from './helpers/service.ts';

const OBJECT_ID = /^[A-Za-z0-9]{10}$/;
const TOKEN = 'r:0123456789abcdef0123456789abcdef';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Creates a row with the master key and returns its objectId. */
async function seed(t: TestService, className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`seed ${className} failed: ${res.status} ${res.text}`);
  return res.json.objectId as string;
}

async function getAsMaster(t: TestService, className: string, id: string) {
  return t.request('GET', `/classes/${className}/${id}`, { as: 'master' });
}

async function countAsMaster(t: TestService, className: string, where?: unknown): Promise<number> {
  const res = await t.request('GET', `/classes/${className}`, {
    as: 'master',
    query: { count: 1, limit: 0, ...(where ? { where } : {}) },
  });
  expect(res.status, res.text).toBe(200);
  return res.json.count as number;
}

// ---------------------------------------------------------------------------------------------
// CRUD shapes, through the REST API with the default allowClientClassCreation: false.
// ---------------------------------------------------------------------------------------------

const crud: Scenario[] = [
  {
    name: 'POST creates a row: 201, {objectId, createdAt}, Location header',
    method: 'POST',
    path: '/classes/Item',
    body: { title: 'first', n: 1 },
    status: 201,
    after: async (ctx, res) => {
      expect(Object.keys(res.json).sort()).toEqual(['createdAt', 'objectId']);
      expect(res.json.objectId).toMatch(OBJECT_ID);
      expect(res.json.createdAt).toMatch(ISO);
      expect(res.headers.get('location')).toMatch(new RegExp(`/api/classes/Item/${res.json.objectId}$`));
      const got = await ctx.t.request('GET', `/classes/Item/${res.json.objectId}`);
      expect(got.json).toMatchObject({
        objectId: res.json.objectId,
        createdAt: res.json.createdAt,
        updatedAt: res.json.createdAt,
        title: 'first',
        n: 1,
      });
    },
  },
  {
    name: 'GET /classes/<C>/<id> returns the row with objectId, createdAt, updatedAt',
    method: 'GET',
    path: '/classes/Item/{item}',
    status: 200,
    expect: { title: 'seeded', n: 5 },
    after: async (ctx, res) => {
      expect(res.json.objectId).toBe(ctx.vars.item);
      expect(res.json.createdAt).toMatch(ISO);
      expect(res.json.updatedAt).toMatch(ISO);
      expect(res.json).not.toHaveProperty('_rperm');
      expect(res.json).not.toHaveProperty('_wperm');
    },
  },
  {
    name: 'GET /classes/<C> lists rows in {results}',
    method: 'GET',
    path: '/classes/Item',
    query: { where: { title: 'seeded' } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.results).toHaveLength(1);
      expect(res.json.results[0].objectId).toBe(ctx.vars.item);
      expect(res.json).not.toHaveProperty('count');
    },
  },
  {
    name: 'PUT answers {updatedAt} only, and the change is stored',
    method: 'PUT',
    path: '/classes/Item/{item}',
    body: { title: 'changed' },
    status: 200,
    after: async (ctx, res) => {
      expect(Object.keys(res.json)).toEqual(['updatedAt']);
      expect(res.json.updatedAt).toMatch(ISO);
      const got = await ctx.t.request('GET', `/classes/Item/${ctx.vars.item}`);
      expect(got.json.title).toBe('changed');
      expect(got.json.updatedAt).toBe(res.json.updatedAt);
      expect(Date.parse(got.json.updatedAt)).toBeGreaterThanOrEqual(Date.parse(got.json.createdAt));
    },
  },
  {
    name: 'PUT with null removes a field',
    method: 'PUT',
    path: '/classes/Item/{item}',
    body: { n: null },
    status: 200,
    after: async (ctx) => {
      const got = await ctx.t.request('GET', `/classes/Item/${ctx.vars.item}`);
      expect(got.json).not.toHaveProperty('n');
    },
  },
  {
    name: 'DELETE answers {} and the row is gone',
    method: 'DELETE',
    path: '/classes/Item/{doomed}',
    status: 200,
    expect: {},
    after: async (ctx, res) => {
      expect(res.json).toEqual({});
      const got = await ctx.t.request('GET', `/classes/Item/${ctx.vars.doomed}`);
      expect(got.status).toBe(404);
      expect(got.json).toEqual({ code: 101, error: 'Object not found.' });
    },
  },
  {
    name: 'DELETE of a missing row is 101',
    method: 'DELETE',
    path: '/classes/Item/nosuchrow1',
    status: 404,
    code: 101,
    errorContains: 'Object not found.',
  },
  {
    name: 'GET of a missing row is 101',
    method: 'GET',
    path: '/classes/Item/nosuchrow1',
    status: 404,
    code: 101,
  },
  {
    name: 'PUT of a missing row is 101',
    method: 'PUT',
    path: '/classes/Item/nosuchrow1',
    body: { title: 'x' },
    status: 404,
    code: 101,
  },
  {
    name: 'GET of a row in a class that does not exist is 101',
    method: 'GET',
    path: '/classes/NoSuchClass/abc',
    status: 404,
    code: 101,
  },
  {
    name: 'find on a class that does not exist is an empty list',
    method: 'GET',
    path: '/classes/NoSuchClass',
    status: 200,
    expect: { results: [] },
  },
  {
    name: 'non-master create in an unknown class is 119 and creates nothing',
    method: 'POST',
    path: '/classes/Unknown',
    body: { a: 1 },
    status: 400,
    code: 119,
    errorContains: 'non-existent class: Unknown',
    after: async (ctx) => {
      const schema = await ctx.t.request('GET', '/schemas/Unknown', { as: 'master' });
      expect(schema.status).not.toBe(200);
      expect(await countAsMaster(ctx.t, 'Unknown')).toBe(0);
    },
  },
  {
    name: 'the master key creates a class on first write, with field types from the values',
    method: 'POST',
    path: '/classes/MadeByMaster',
    as: 'master',
    body: { s: 'x', n: 1, b: true, arr: [1], obj: { a: 1 } },
    status: 201,
    after: async (ctx) => {
      const schema = await ctx.t.request('GET', '/schemas/MadeByMaster', { as: 'master' });
      expect(schema.status, schema.text).toBe(200);
      expect(schema.json.fields).toMatchObject({
        objectId: { type: 'String' },
        createdAt: { type: 'Date' },
        updatedAt: { type: 'Date' },
        ACL: { type: 'ACL' },
        s: { type: 'String' },
        n: { type: 'Number' },
        b: { type: 'Boolean' },
        arr: { type: 'Array' },
        obj: { type: 'Object' },
      });
    },
  },
  {
    name: 'a non-master write adds a new field to an existing class',
    method: 'POST',
    path: '/classes/Item',
    body: { brandNew: 'yes' },
    status: 201,
    after: async (ctx) => {
      const schema = await ctx.t.request('GET', '/schemas/Item', { as: 'master' });
      expect(schema.json.fields.brandNew).toEqual({ type: 'String' });
    },
  },
  {
    name: "a field's type is fixed by its first value: a later String into a Number is 111",
    method: 'POST',
    path: '/classes/Item',
    body: { n: 'not a number' },
    status: 400,
    code: 111,
    errorContains: 'expected Number but got String',
  },
  {
    name: 'type mismatch on update is 111 and changes nothing (other fields in the body included)',
    method: 'PUT',
    path: '/classes/Item/{stable}',
    body: { title: 'should not be written', n: { __type: 'Date', iso: '2024-01-01T00:00:00.000Z' } },
    status: 400,
    code: 111,
    after: async (ctx) => {
      const got = await ctx.t.request('GET', `/classes/Item/${ctx.vars.stable}`);
      expect(got.json.title).toBe('stable');
      expect(got.json.n).toBe(7);
    },
  },
  {
    name: 'a pointer field keeps its target class: a pointer to another class is 111',
    method: 'POST',
    path: '/classes/Item',
    body: { owner: { __type: 'Pointer', className: 'Other', objectId: 'abc' } },
    status: 400,
    code: 111,
    errorContains: 'Pointer<Owner>',
  },
  {
    name: 'objectId in the body is rejected (105)',
    method: 'POST',
    path: '/classes/Item',
    body: { objectId: 'chosenByMe', title: 'x' },
    status: 400,
    code: 105,
  },
  {
    name: 'createdAt in an update body is rejected (105)',
    method: 'PUT',
    path: '/classes/Item/{stable}',
    body: { createdAt: '2020-01-01T00:00:00.000Z' },
    status: 400,
    code: 105,
  },
  {
    name: 'an invalid field name is 105',
    method: 'POST',
    path: '/classes/Item',
    body: { '1bad': 1 },
    status: 400,
    code: 105,
  },
  {
    name: 'a body that is not a JSON object is 107',
    method: 'POST',
    path: '/classes/Item',
    body: [1, 2],
    status: 400,
    code: 107,
  },
  {
    name: 'a body that is not JSON is 107',
    method: 'POST',
    path: '/classes/Item',
    rawBody: '{"a":',
    headers: { 'Content-Type': 'application/json' },
    status: 400,
    code: 107,
  },
  {
    name: 'an invalid class name is 103',
    method: 'POST',
    path: '/classes/1nvalid',
    as: 'master',
    body: { a: 1 },
    status: 400,
    code: 103,
  },
  {
    name: 'unknown __type is 111',
    method: 'POST',
    path: '/classes/Item',
    body: { weird: { __type: 'Banana' } },
    status: 400,
    code: 111,
  },
  {
    name: 'a malformed pointer is 106',
    method: 'POST',
    path: '/classes/Item',
    body: { owner: { __type: 'Pointer', className: 'Owner' } },
    status: 400,
    code: 106,
  },
  {
    name: 'a GeoPoint out of range is 111',
    method: 'POST',
    path: '/classes/Item',
    body: { where: { __type: 'GeoPoint', latitude: 91, longitude: 0 } },
    status: 400,
    code: 111,
  },
  {
    name: 'GET with an unknown parameter is 102',
    method: 'GET',
    path: '/classes/Item/{stable}',
    query: { where: '{}' },
    status: 400,
    code: 102,
    errorContains: 'where',
  },
  {
    name: 'keys on GET narrows the fields (built-ins always returned)',
    method: 'GET',
    path: '/classes/Item/{stable}',
    query: { keys: 'title' },
    status: 200,
    after: async (ctx, res) => {
      expect(Object.keys(res.json).sort()).toEqual(['createdAt', 'objectId', 'title', 'updatedAt']);
      expect(res.json.objectId).toBe(ctx.vars.stable);
    },
  },
  {
    name: 'excludeKeys on GET drops the fields',
    method: 'GET',
    path: '/classes/Item/{stable}',
    query: { excludeKeys: 'title' },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json).not.toHaveProperty('title');
      expect(res.json.n).toBe(7);
    },
  },
];

runScenarios('records: CRUD shapes', crud, {
  setup: async (ctx: ScenarioContext) => {
    ctx.vars.owner = await seed(ctx.t, 'Owner', { name: 'o' });
    ctx.vars.item = await seed(ctx.t, 'Item', {
      title: 'seeded',
      n: 5,
      owner: { __type: 'Pointer', className: 'Owner', objectId: ctx.vars.owner },
    });
    ctx.vars.doomed = await seed(ctx.t, 'Item', { title: 'doomed' });
    ctx.vars.stable = await seed(ctx.t, 'Item', { title: 'stable', n: 7 });
  },
});

// ---------------------------------------------------------------------------------------------
// Client class creation switched on.
// ---------------------------------------------------------------------------------------------

runScenarios(
  'records: allowClientClassCreation true',
  [
    {
      name: 'a non-master write creates the class',
      method: 'POST',
      path: '/classes/ClientMade',
      body: { a: 1 },
      status: 201,
      after: async (ctx) => {
        expect(await countAsMaster(ctx.t, 'ClientMade')).toBe(1);
      },
    },
    {
      name: 'the same class then takes more rows, and types stay fixed',
      method: 'POST',
      path: '/classes/ClientMade',
      body: { a: 'text' },
      status: 400,
      code: 111,
    },
  ],
  { serviceOptions: { allowClientClassCreation: true } },
);

// ---------------------------------------------------------------------------------------------
// Every wire type round-trips.
// ---------------------------------------------------------------------------------------------

describe('records: wire types round-trip', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('stores and returns every type unchanged, and fixes the schema types', async () => {
    const targetId = await seed(t, 'Target', { name: 't' });
    const values = {
      str: 'hello',
      num: 3.25,
      bool: false,
      date: { __type: 'Date', iso: '2026-11-22T05:00:48.658Z' },
      ptr: { __type: 'Pointer', className: 'Target', objectId: targetId },
      file: {
        __type: 'File',
        name: '00000000000000000000000000000000_report.pdf',
        url: 'http://files.example/report.pdf',
      },
      geo: { __type: 'GeoPoint', latitude: 40.5, longitude: -73.25 },
      poly: {
        __type: 'Polygon',
        coordinates: [
          [0, 0],
          [0, 1],
          [1, 1],
          [1, 0],
          [0, 0],
        ],
      },
      bytes: { __type: 'Bytes', base64: 'aGVsbG8gd29ybGQ=' },
      rel: { __type: 'Relation', className: 'Target' },
      obj: {
        a: { b: [1, 'two', { c: true }] },
        d: null,
        when: { __type: 'Date', iso: '2020-01-01T00:00:00.000Z' },
      },
      arr: [1, 'two', { three: 3 }, [4], { __type: 'Pointer', className: 'Target', objectId: targetId }],
    };
    const created = await t.request('POST', '/classes/AllTypes', { as: 'master', body: values });
    expect(created.status, created.text).toBe(201);
    const id = created.json.objectId as string;

    // File values keep their name; the url is rebuilt from the service's public address.
    const expected = {
      ...values,
      file: {
        __type: 'File',
        name: '00000000000000000000000000000000_report.pdf',
        url: `http://localhost:${t.port}/api/files/test-app/00000000000000000000000000000000_report.pdf`,
      },
    };
    const got = await t.request('GET', `/classes/AllTypes/${id}`);
    expect(got.status).toBe(200);
    for (const [k, v] of Object.entries(expected)) expect(got.json[k], k).toEqual(v);

    const found = await t.request('GET', '/classes/AllTypes', { query: { where: { objectId: id } } });
    for (const [k, v] of Object.entries(expected)) expect(found.json.results[0][k], k).toEqual(v);

    const schema = await t.request('GET', '/schemas/AllTypes', { as: 'master' });
    expect(schema.json.fields).toMatchObject({
      str: { type: 'String' },
      num: { type: 'Number' },
      bool: { type: 'Boolean' },
      date: { type: 'Date' },
      ptr: { type: 'Pointer', targetClass: 'Target' },
      file: { type: 'File' },
      geo: { type: 'GeoPoint' },
      poly: { type: 'Polygon' },
      bytes: { type: 'Bytes' },
      rel: { type: 'Relation', targetClass: 'Target' },
      obj: { type: 'Object' },
      arr: { type: 'Array' },
    });
  });

  it('normalises dates to ISO 8601 with milliseconds in UTC', async () => {
    const res = await t.request('POST', '/classes/Dates', {
      as: 'master',
      body: { d: { __type: 'Date', iso: '2026-01-02T03:04:05+02:00' } },
    });
    expect(res.status, res.text).toBe(201);
    const got = await t.request('GET', `/classes/Dates/${res.json.objectId}`);
    expect(got.json.d).toEqual({ __type: 'Date', iso: '2026-01-02T01:04:05.000Z' });
  });

  it('rejects a Date whose iso is not a date (111) and writes nothing', async () => {
    const before = await countAsMaster(t, 'Dates');
    const res = await t.request('POST', '/classes/Dates', {
      body: { d: { __type: 'Date', iso: 'yesterday' } },
    });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(111);
    expect(await countAsMaster(t, 'Dates')).toBe(before);
  });

  it('updates every type in place', async () => {
    const id = await seed(t, 'Swap', {
      geo: { __type: 'GeoPoint', latitude: 1, longitude: 1 },
      file: { __type: 'File', name: '00000000000000000000000000000000_a.txt', url: 'http://x/a.txt' },
      bytes: { __type: 'Bytes', base64: 'AA==' },
      date: { __type: 'Date', iso: '2020-01-01T00:00:00.000Z' },
      poly: {
        __type: 'Polygon',
        coordinates: [
          [0, 0],
          [0, 2],
          [2, 2],
          [0, 0],
        ],
      },
      obj: { x: 1 },
    });
    const next = {
      geo: { __type: 'GeoPoint', latitude: -10, longitude: 170 },
      file: { __type: 'File', name: '00000000000000000000000000000000_b.txt', url: 'http://x/b.txt' },
      bytes: { __type: 'Bytes', base64: 'AQI=' },
      date: { __type: 'Date', iso: '2021-06-01T12:00:00.000Z' },
      poly: {
        __type: 'Polygon',
        coordinates: [
          [5, 5],
          [5, 6],
          [6, 6],
          [5, 5],
        ],
      },
      obj: { y: { z: 2 } },
    };
    const put = await t.request('PUT', `/classes/Swap/${id}`, { body: next });
    expect(put.status, put.text).toBe(200);
    const got = await t.request('GET', `/classes/Swap/${id}`);
    const expected = {
      ...next,
      file: {
        ...next.file,
        url: `http://localhost:${t.port}/api/files/test-app/00000000000000000000000000000000_b.txt`,
      },
    };
    for (const [k, v] of Object.entries(expected)) expect(got.json[k], k).toEqual(v);
  });

  it('sets and removes sub-keys of an Object field with dotted keys', async () => {
    const id = await seed(t, 'Nested', { obj: { a: 1, b: { c: 2 } } });
    const put = await t.request('PUT', `/classes/Nested/${id}`, {
      body: { 'obj.b.c': 3, 'obj.d': 'new', 'obj.a': { __op: 'Delete' } },
    });
    expect(put.status, put.text).toBe(200);
    const got = await t.request('GET', `/classes/Nested/${id}`);
    expect(got.json.obj).toEqual({ b: { c: 3 }, d: 'new' });
  });
});

// ---------------------------------------------------------------------------------------------
// Row ACLs.
// ---------------------------------------------------------------------------------------------

const aclRows: Scenario[] = [
  {
    name: 'a row with ACL {} is invisible to a non-master get (101 "Object not found.")',
    method: 'GET',
    path: '/classes/Secret/{hidden}',
    status: 404,
    code: 101,
    errorContains: 'Object not found.',
    notContains: ['top secret'],
  },
  {
    name: 'a row with ACL {} is invisible to a non-master find',
    method: 'GET',
    path: '/classes/Secret',
    status: 200,
    notContains: ['top secret'],
    after: async (ctx, res) => {
      const ids = res.json.results.map((r: { objectId: string }) => r.objectId);
      expect(ids).toContain(ctx.vars.open);
      expect(ids).toContain(ctx.vars.readOnly);
      expect(ids).not.toContain(ctx.vars.hidden);
      expect(ids).not.toContain(ctx.vars.mine);
      expect(ids).not.toContain(ctx.vars.masterDeletes);
    },
  },
  {
    name: 'a row with ACL {} is invisible to a non-master find by its objectId',
    method: 'GET',
    path: '/classes/Secret',
    query: { where: '{"objectId":"{hidden}"}', count: '1' },
    status: 200,
    expect: { results: [], count: 0 },
  },
  {
    name: 'the master key reads a row with ACL {} (and sees its ACL)',
    method: 'GET',
    path: '/classes/Secret/{hidden}',
    as: 'master',
    status: 200,
    expect: { text: 'top secret', ACL: {} },
  },
  {
    name: 'a non-master update of a row with ACL {} is 101 and leaves the row intact',
    method: 'PUT',
    path: '/classes/Secret/{hidden}',
    body: { text: 'overwritten', extra: { __op: 'Increment', amount: 1 } },
    status: 404,
    code: 101,
    errorContains: 'Object not found.',
    after: async (ctx) => {
      const got = await getAsMaster(ctx.t, 'Secret', ctx.vars.hidden!);
      expect(got.json.text).toBe('top secret');
      expect(got.json).not.toHaveProperty('extra');
      expect(got.json.updatedAt).toBe(got.json.createdAt);
    },
  },
  {
    name: 'a non-master delete of a row with ACL {} is 101 and leaves the row intact',
    method: 'DELETE',
    path: '/classes/Secret/{hidden}',
    status: 404,
    code: 101,
    after: async (ctx) => {
      const got = await getAsMaster(ctx.t, 'Secret', ctx.vars.hidden!);
      expect(got.status).toBe(200);
    },
  },
  {
    name: 'a public-read row without public write can be read but not updated (101)',
    method: 'PUT',
    path: '/classes/Secret/{readOnly}',
    body: { text: 'changed' },
    status: 404,
    code: 101,
    after: async (ctx) => {
      const got = await ctx.t.request('GET', `/classes/Secret/${ctx.vars.readOnly}`);
      expect(got.status).toBe(200);
      expect(got.json.text).toBe('read only');
      expect(got.json.ACL).toEqual({ '*': { read: true } });
    },
  },
  {
    name: 'a public-read row without public write cannot be deleted (101)',
    method: 'DELETE',
    path: '/classes/Secret/{readOnly}',
    status: 404,
    code: 101,
  },
  {
    name: "the user named in a row's ACL reads it with their session",
    method: 'GET',
    path: '/classes/Secret/{mine}',
    sessionToken: TOKEN,
    status: 200,
    expect: { text: 'mine' },
  },
  {
    name: 'another caller does not see that row',
    method: 'GET',
    path: '/classes/Secret/{mine}',
    status: 404,
    code: 101,
  },
  {
    name: 'the user named in the ACL updates the row',
    method: 'PUT',
    path: '/classes/Secret/{mine}',
    sessionToken: TOKEN,
    body: { text: 'mine, edited' },
    status: 200,
  },
  {
    name: 'an update may set an ACL that then hides the row',
    method: 'PUT',
    path: '/classes/Secret/{toHide}',
    body: { ACL: {} },
    status: 200,
    after: async (ctx) => {
      const got = await ctx.t.request('GET', `/classes/Secret/${ctx.vars.toHide}`);
      expect(got.status).toBe(404);
    },
  },
  {
    name: 'the master key updates and deletes a row with ACL {}',
    method: 'DELETE',
    path: '/classes/Secret/{masterDeletes}',
    as: 'master',
    status: 200,
    expect: {},
  },
  {
    name: 'invalid ACL: not an object (123)',
    method: 'POST',
    path: '/classes/Secret',
    body: { text: 'acl-bad-1', ACL: ['*'] },
    status: 400,
    code: 123,
    after: async (ctx) => {
      expect(await countAsMaster(ctx.t, 'Secret', { text: 'acl-bad-1' })).toBe(0);
    },
  },
  {
    name: 'invalid ACL: permission not a boolean (123)',
    method: 'POST',
    path: '/classes/Secret',
    body: { text: 'acl-bad-2', ACL: { '*': { read: 'yes' } } },
    status: 400,
    code: 123,
    after: async (ctx) => {
      expect(await countAsMaster(ctx.t, 'Secret', { text: 'acl-bad-2' })).toBe(0);
    },
  },
  {
    name: 'invalid ACL: unknown permission (123)',
    method: 'POST',
    path: '/classes/Secret',
    body: { ACL: { '*': { delete: true } } },
    status: 400,
    code: 123,
  },
  {
    name: 'invalid ACL: bad principal (123)',
    method: 'POST',
    path: '/classes/Secret',
    body: { ACL: { 'not a user!': { read: true } } },
    status: 400,
    code: 123,
  },
  {
    name: 'invalid ACL: entry not an object (123)',
    method: 'POST',
    path: '/classes/Secret',
    body: { ACL: { '*': true } },
    status: 400,
    code: 123,
  },
  {
    name: 'invalid ACL on update is 123 and changes nothing',
    method: 'PUT',
    path: '/classes/Secret/{open}',
    body: { text: 'should not change', ACL: { '*': { read: 1 } } },
    status: 400,
    code: 123,
    after: async (ctx) => {
      const got = await ctx.t.request('GET', `/classes/Secret/${ctx.vars.open}`);
      expect(got.json.text).toBe('open');
      expect(got.json).not.toHaveProperty('ACL');
    },
  },
];

runScenarios('records: row ACLs', aclRows, {
  setup: async (ctx) => {
    const t = ctx.t;
    ctx.vars.user = await seed(t, '_User', { username: 'alice' });
    await seed(t, '_Session', {
      user: { __type: 'Pointer', className: '_User', objectId: ctx.vars.user },
      sessionToken: TOKEN,
    });
    ctx.vars.open = await seed(t, 'Secret', { text: 'open' });
    ctx.vars.hidden = await seed(t, 'Secret', { text: 'top secret', ACL: {} });
    ctx.vars.readOnly = await seed(t, 'Secret', { text: 'read only', ACL: { '*': { read: true } } });
    ctx.vars.mine = await seed(t, 'Secret', {
      text: 'mine',
      ACL: { [ctx.vars.user]: { read: true, write: true } },
    });
    ctx.vars.toHide = await seed(t, 'Secret', { text: 'to hide' });
    ctx.vars.masterDeletes = await seed(t, 'Secret', { text: 'master deletes', ACL: {} });
  },
});

// ---------------------------------------------------------------------------------------------
// A failed write leaves no trace: not in the rows and not in the schema.
// ---------------------------------------------------------------------------------------------

describe('records: failed writes change nothing', () => {
  let t: TestService;
  let id: string;
  let hidden: string;
  beforeAll(async () => {
    t = await startService();
    id = await seed(t, 'Clean', { a: 1 });
    hidden = await seed(t, 'Clean', { a: 2, ACL: {} });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an update of a missing row that would add a field adds no field', async () => {
    const res = await t.request('PUT', '/classes/Clean/missingRow', { body: { fresh: 1 } });
    expect(res.status).toBe(404);
    expect(res.json.code).toBe(101);
    const schema = await t.request('GET', '/schemas/Clean', { as: 'master' });
    expect(schema.json.fields).not.toHaveProperty('fresh');
    // The field can still be created later, with any type.
    const ok = await t.request('PUT', `/classes/Clean/${id}`, { body: { fresh: 'text' } });
    expect(ok.status, ok.text).toBe(200);
    const found = await t.request('GET', '/classes/Clean', { query: { where: { fresh: 'text' } } });
    expect(found.status, found.text).toBe(200);
    expect(found.json.results).toHaveLength(1);
  });

  it('an update of a row the caller may not write that would add a field adds no field', async () => {
    const res = await t.request('PUT', `/classes/Clean/${hidden}`, {
      body: {
        other: 1,
        rel: { __op: 'AddRelation', objects: [{ __type: 'Pointer', className: 'Clean', objectId: id }] },
      },
    });
    expect(res.status).toBe(404);
    const schema = await t.request('GET', '/schemas/Clean', { as: 'master' });
    expect(schema.json.fields).not.toHaveProperty('other');
    expect(schema.json.fields).not.toHaveProperty('rel');
    const find = await t.request('GET', '/classes/Clean', { as: 'master', query: { where: { other: 1 } } });
    expect(find.status, find.text).toBe(200);
    expect(find.json.results).toEqual([]);
    const ok = await t.request('PUT', `/classes/Clean/${id}`, { body: { other: 'now a string' } });
    expect(ok.status, ok.text).toBe(200);
  });
});
