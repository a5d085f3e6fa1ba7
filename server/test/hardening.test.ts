import { expect } from 'vitest';
import { runScenarios, type Scenario, type ScenarioContext } from './helpers/scenarios.ts';
import { ON_POSTGRES } from './helpers/service.ts';

/**
 * Issue 10's findings, one row each: input any caller can send gets a 4xx with a protocol code and
 * changes nothing; nothing answers 500, and no write is acknowledged with an error after it
 * committed.
 */

/** An object nested `depth` levels: {a: {a: ... {a: 1}}}. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

/** `$inQuery` nested `depth` levels into the class itself. */
function nestedInQuery(depth: number): Record<string, unknown> {
  let where: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) where = { self: { $inQuery: { className: 'Thing', where } } };
  return where;
}

const classes = async (ctx: ScenarioContext): Promise<string[]> =>
  ((await ctx.t.request('GET', '/schemas', { as: 'master' })).json.results as Array<{ className: string }>)
    .map((s) => s.className)
    .sort();

const thingCount = async (ctx: ScenarioContext): Promise<number> =>
  (await ctx.t.request('GET', '/classes/Thing', { as: 'master', query: { count: 1, limit: 0 } })).json.count;

/** The schema list and the rows of Thing are as the setup left them. */
const unchanged = async (ctx: ScenarioContext) => {
  expect(await classes(ctx)).toEqual(JSON.parse(ctx.vars.classes!));
  expect(await thingCount(ctx)).toBe(1);
};

const bad = (s: Scenario): Scenario => ({ ...s, after: s.after ?? unchanged });

const scenarios: Scenario[] = [
  // ---- names inherited from JavaScript objects ----
  bad({
    name: 'where on constructor',
    method: 'GET',
    path: '/classes/Thing',
    query: { where: { constructor: 1 } },
    status: 400,
    code: 105,
    errorContains: 'constructor is a reserved name',
  }),
  bad({
    name: 'where on toString',
    method: 'GET',
    path: '/classes/Thing',
    query: { where: { toString: 'x' } },
    status: 400,
    code: 105,
  }),
  bad({
    name: 'where on hasOwnProperty',
    method: 'GET',
    path: '/classes/Thing',
    query: { where: { hasOwnProperty: { $exists: true } } },
    status: 400,
    code: 105,
  }),
  bad({
    name: 'order by constructor',
    method: 'GET',
    path: '/classes/Thing',
    query: { order: 'constructor' },
    status: 400,
    code: 105,
    errorContains: 'Invalid order: "constructor"',
  }),
  bad({
    name: 'a write of a field named constructor',
    method: 'POST',
    path: '/classes/Thing',
    as: 'master',
    body: { constructor: 1 },
    status: 400,
    code: 105,
    errorContains: 'constructor is a reserved name',
  }),
  bad({
    name: 'a class named __proto__: refused before anything is created',
    method: 'POST',
    path: '/classes/__proto__',
    as: 'master',
    body: { a: 'x' },
    status: 400,
    code: 103,
    errorContains: 'The name __proto__ is reserved.',
  }),
  bad({
    name: 'reading the class __proto__',
    method: 'GET',
    path: '/classes/__proto__',
    status: 400,
    code: 103,
  }),
  bad({
    name: 'a key named __proto__ anywhere in a body (duplicate keys: the last wins, and is refused)',
    method: 'POST',
    path: '/classes/Thing',
    as: 'master',
    rawBody: '{"o":1,"o":{"__proto__":{"polluted":true}}}',
    headers: { 'Content-Type': 'application/json' },
    status: 400,
    code: 107,
    errorContains: 'The request body holds a key named __proto__.',
    after: async (ctx) => {
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      await unchanged(ctx);
    },
  }),
  bad({
    name: 'a key named __proto__ in a where',
    method: 'GET',
    path: '/classes/Thing',
    query: { where: '{"o":{"__proto__":{"x":1}}}' },
    status: 400,
    code: 102,
    errorContains: 'Invalid where: it holds a key named __proto__.',
  }),
  // ---- numbers and operators ----
  bad({
    name: 'skip past 2^53 is refused, naming the parameter',
    method: 'GET',
    path: '/classes/Thing',
    query: { skip: '99999999999999999999' },
    status: 400,
    code: 102,
    errorContains: 'Invalid skip: it must be a whole number from 0 to 9007199254740991.',
  }),
  bad({
    name: 'limit past 2^53 is refused the same way',
    method: 'GET',
    path: '/classes/Thing',
    query: { limit: '99999999999999999999' },
    status: 400,
    code: 102,
    errorContains: 'Invalid limit: it must be a whole number from 0 to 9007199254740991.',
  }),
  bad({
    name: '$containedBy [] on objectId',
    method: 'GET',
    path: '/classes/Thing',
    query: { where: { objectId: { $containedBy: [] } } },
    status: 400,
    code: 102,
    errorContains: '$containedBy needs an Array field, objectId is String',
  }),
  // ---- nesting ----
  bad({
    name: 'an object nested 3,000 levels in a field value',
    method: 'POST',
    path: '/classes/Thing',
    as: 'master',
    body: { o: nested(3000) },
    status: 400,
    code: 107,
    errorContains: 'nests deeper than 128 levels',
  }),
  bad({
    name: 'an object nested just over the limit is not stored either',
    method: 'POST',
    path: '/classes/Thing',
    as: 'master',
    body: { o: nested(128) },
    status: 400,
    code: 107,
  }),
  {
    name: 'an object nested 100 levels is stored and queried by a dot path (in another class)',
    method: 'POST',
    path: '/classes/Deep',
    as: 'master',
    body: { o: nested(100) },
    status: 201,
    after: async (ctx) => {
      const res = await ctx.t.request('GET', '/classes/Deep', {
        query: { where: { 'o.a.a': { $exists: true } } },
      });
      expect(res.status).toBe(200);
      expect(res.json.results).toHaveLength(1);
    },
  },
  bad({
    name: 'a where nested deeper than the limit',
    method: 'GET',
    path: '/classes/Thing',
    query: { where: { o: { $eq: nested(200) } } },
    status: 400,
    code: 102,
    errorContains: 'nests deeper than 128 levels',
  }),
  // SQLite's own limit on expression depth; PostgreSQL runs such a where.
  ...(ON_POSTGRES
    ? []
    : [
        bad({
          name: '$inQuery nested 30 levels, master key',
          method: 'GET',
          path: '/classes/Thing',
          as: 'master',
          query: { where: nestedInQuery(30) },
          status: 400,
          code: 102,
          expect: {
            error: 'Invalid where: it is too complex for the store. Nest fewer subqueries and conditions.',
          },
          notContains: ['Expression tree', 'maximum depth'],
        }),
      ]),
  {
    name: '$inQuery nested 15 levels, master key, runs',
    method: 'GET',
    path: '/classes/Thing',
    as: 'master',
    query: { where: nestedInQuery(15) },
    status: 200,
    expect: { results: [] },
  },
  // ---- the store's own tables ----
  bad({
    name: 'a class named sqlite_master',
    method: 'POST',
    path: '/classes/sqlite_master',
    as: 'master',
    body: { a: 1 },
    status: 400,
    code: 103,
    errorContains: 'Invalid class name: "sqlite_master". The name sqlite_master is reserved.',
  }),
  bad({
    name: 'a schema for _GlobalConfig, master key',
    method: 'POST',
    path: '/schemas/_GlobalConfig',
    as: 'master',
    body: {},
    status: 400,
    code: 103,
  }),
  bad({
    name: 'rows of _GlobalConfig through the class routes, master key',
    method: 'POST',
    path: '/classes/_GlobalConfig',
    as: 'master',
    body: { a: 1 },
    status: 400,
    code: 103,
  }),
  bad({
    name: 'a 5,000-character field name through an anonymous sign-up',
    method: 'POST',
    path: '/users',
    body: { username: 'longfield', password: 'pw', ['f'.repeat(5000)]: 1 },
    status: 400,
    code: 105,
    errorContains: 'at most 63 characters',
    after: async (ctx) => {
      const users = await ctx.t.request('GET', '/users', {
        as: 'master',
        query: { where: { username: 'longfield' } },
      });
      expect(users.json.results).toEqual([]);
      await unchanged(ctx);
    },
  }),
];

runScenarios('hardening: bad input answers 4xx with a code and changes nothing', scenarios, {
  setup: async (ctx) => {
    await ctx.t.request('POST', '/schemas/Thing', {
      as: 'master',
      body: { fields: { self: { type: 'Pointer', targetClass: 'Thing' }, o: { type: 'Object' } } },
    });
    await ctx.t.request('POST', '/classes/Thing', {
      as: 'master',
      body: { name: 'one', ACL: { '*': { read: true } } },
    });
    await ctx.t.request('POST', '/schemas/Deep', {
      as: 'master',
      body: { fields: { o: { type: 'Object' } } },
    });
    ctx.vars.classes = JSON.stringify(await classes(ctx));
  },
});
