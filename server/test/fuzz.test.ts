import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialHeaders, startService, type TestService } from './helpers/service.ts';

/**
 * Adversarial input on every route (wrong types, huge numbers, deep nesting, unicode, control
 * characters and NUL in names and values, SQL metacharacters, prototype names, duplicate keys,
 * oversized arrays, backtracking patterns, odd batch paths): every answer is below 500, every
 * refusal is the JSON error shape with a code, the service stays up and /health keeps answering
 * fast, and a master read afterwards shows that nothing changed. Write bodies are made invalid by
 * construction (each carries at least one poisoned part), so any write that lands is a defect.
 */

const PROTOTYPE = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];
const WEIRD = [
  '',
  ' ',
  'a b',
  '1abc',
  "x'; DROP TABLE Thing; --",
  'x"y',
  'x\u0000y',
  'ünïcødé',
  '😀',
  '\u202e',
  '$where',
  'a.b.c',
  '..',
  '%00',
  'x'.repeat(5000),
  'sqlite_master',
  '_SCHEMA',
  '_GlobalConfig',
];

const nameArb = fc.oneof(
  fc.constantFrom(...PROTOTYPE, ...WEIRD),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 10 }),
);
/** Names that can never be a field: each breaks the naming rule. */
const badFieldArb = fc.oneof(
  fc.constantFrom(
    ...PROTOTYPE,
    ...WEIRD.filter((w) => w !== '$where' && w !== 'a.b.c' && w !== 'sqlite_master'),
  ),
  fc.string({ minLength: 1, maxLength: 6 }).map((s) => `9${s}`),
  fc.constant('f'.repeat(64)),
);

/** Config parameter names that break `^[A-Za-z0-9_.-]{1,200}$`. */
const badParamArb = fc.constantFrom('', 'a b', "x'y", '😀', 'x'.repeat(201), '$x', 'a\u0000b', 'ü');

function nested(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { k: v };
  return v;
}

const scalarArb = fc.oneof(
  fc.constantFrom(
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER + 2,
    -0,
    '99999999999999999999',
    'NaN',
    'Infinity',
    null,
    true,
    '',
  ),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  scalarArb,
  fc.array(scalarArb, { maxLength: 5 }),
  fc.dictionary(nameArb, scalarArb, { maxKeys: 3 }),
  fc.constantFrom(
    { __type: 'Date', iso: 'not a date' },
    { __type: 'Pointer', className: '__proto__', objectId: 'x' },
    { __type: 'GeoPoint', latitude: 91, longitude: 0 },
    { __type: 'Bytes', base64: 123 },
    { __op: 'Increment', amount: 'a lot' },
    { __op: 'Nope' },
    { __op: 'AddRelation', objects: [1, 2] },
    new Array(50_000).fill(0),
  ),
  fc.integer({ min: 129, max: 3000 }).map((d) => nested(d, 1)),
);
/** A write body that no rule accepts: one poisoned part among ordinary ones. */
const poisonedBodyArb = fc
  .tuple(
    fc.dictionary(fc.constantFrom('title', 'n', 'tags', 'o'), valueArb, { maxKeys: 3 }),
    fc.oneof(
      fc.tuple(badFieldArb, valueArb).map(([k, v]) => [k, v] as const),
      fc.constant(['objectId', 5] as const),
      fc.constant(['createdAt', 'now'] as const),
      fc.constant(['ACL', { '*': { read: 'yes' } }] as const),
      fc.constant(['o', nested(200, 1)] as const),
      fc.constant(['n', { __op: 'Increment', amount: 'x' }] as const),
      fc.constant(['tags', { __op: 'Frobnicate', objects: [] }] as const),
    ),
  )
  .map(([body, [k, v]]) => ({ ...body, [k]: v }));

const whereArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.dictionary(nameArb, valueArb, { maxKeys: 3 }),
  fc.constantFrom(
    { title: { $regex: '(a|a)+$' } },
    { title: { $regex: '^(a+)+$' } },
    { title: { $regex: '(a)\\1' } },
    { title: { $regex: 'x'.repeat(2000) } },
    { $or: [] },
    { $and: 'x' },
    { title: { $nope: 1 } },
    { loc: { $nearSphere: { latitude: 'x' } } },
    { objectId: { $containedBy: [] } },
    { self: nested(60, { $inQuery: { className: 'Thing', where: {} } }) },
    { n: { $in: new Array(20_000).fill(1) } },
    { $relatedTo: { object: { __type: 'Pointer', className: 'Nope', objectId: 'x' }, key: '__proto__' } },
  ),
);

const queryArb = fc.record(
  {
    where: fc.oneof(
      whereArb.map((w) => JSON.stringify(w)),
      fc.constantFrom('{', 'null', '[]', '"x"', '{"a":1,"a":2}'),
    ),
    order: fc.oneof(nameArb, fc.constantFrom('-', '-constructor', 'a,b,,c')),
    limit: fc.oneof(fc.constantFrom('99999999999999999999', '-1', '1.5', 'x'), fc.integer().map(String)),
    skip: fc.oneof(fc.constantFrom('99999999999999999999', '-1', '1e400', 'x'), fc.integer().map(String)),
    keys: nameArb,
    include: nameArb,
    count: fc.constantFrom('1', 'yes', '2'),
    [String('unknown')]: fc.string(),
  },
  { requiredKeys: [] },
);

type Req = {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  rawBody?: string;
  as?: 'master' | 'rest';
};

const classArb = fc.oneof(
  fc.constant('Thing'),
  nameArb.map((n) => encodeURIComponent(n)),
);
const idArb = fc.oneof(
  fc.constant('{row}'),
  nameArb.map((n) => encodeURIComponent(n || 'x')),
);
const asArb = fc.constantFrom('master' as const, 'rest' as const);

const requestArb = fc.oneof(
  fc.record({
    method: fc.constant('GET'),
    path: classArb.map((c) => `/classes/${c}`),
    query: queryArb,
    as: asArb,
  }),
  fc.record({
    method: fc.constant('GET'),
    path: fc.tuple(classArb, idArb).map(([c, i]) => `/classes/${c}/${i}`),
    query: queryArb,
    as: asArb,
  }),
  fc.record({
    method: fc.constant('POST'),
    path: classArb.map((c) => `/classes/${c}`),
    body: poisonedBodyArb,
    as: asArb,
  }),
  fc.record({
    method: fc.constant('PUT'),
    path: fc.tuple(classArb, idArb).map(([c, i]) => `/classes/${c}/${i}`),
    body: poisonedBodyArb,
    as: asArb,
  }),
  fc.record({
    method: fc.constant('DELETE'),
    path: fc
      .tuple(classArb, idArb)
      .filter(([, i]) => i !== '{row}')
      .map(([c, i]) => `/classes/${c}/${i}`),
    as: asArb,
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.constant('/users'),
    body: poisonedBodyArb.map((b) => ({ ...b, username: 'fuzzed', password: 'pw' })),
  }),
  fc.record({
    method: fc.constantFrom('POST', 'GET'),
    path: fc.constant('/login'),
    body: fc.dictionary(nameArb, valueArb, { maxKeys: 3 }),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.constantFrom('/logout', '/requestPasswordReset', '/verificationEmailRequest'),
    body: fc.dictionary(nameArb, valueArb, { maxKeys: 2 }),
  }),
  fc.record({
    method: fc.constant('GET'),
    path: fc.constantFrom('/users/me', '/sessions', '/sessions/me', '/config', '/serverInfo'),
  }),
  fc.record({
    method: fc.constant('PUT'),
    path: fc.constant('/config'),
    as: asArb,
    body: fc.oneof(
      fc.dictionary(nameArb, valueArb),
      fc.record({
        params: fc.dictionary(badParamArb, valueArb, { minKeys: 1 }),
      }),
    ),
  }),
  fc.record({
    method: fc.constantFrom('POST', 'PUT'),
    path: classArb.map((c) => `/schemas/${c}`),
    as: asArb,
    body: fc.record({ fields: fc.dictionary(nameArb, valueArb, { minKeys: 1, maxKeys: 3 }) }),
  }),
  fc.record({
    method: fc.constant('DELETE'),
    path: fc
      .tuple(fc.constantFrom('schemas', 'purge'), nameArb)
      .map(([r, n]) => `/${r}/${encodeURIComponent(n || '_User')}`),
    as: fc.constant('rest' as const),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: nameArb.map((n) => `/events/${encodeURIComponent(n)}`),
    body: fc.dictionary(nameArb, valueArb, { maxKeys: 2 }),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.constant('/batch'),
    as: asArb,
    body: fc.record({
      requests: fc.array(
        fc
          .record({
            method: fc.constantFrom('POST', 'PUT', 'GET', 'DELETE', 'PATCH', 'post', 1),
            path: fc.oneof(
              fc.constantFrom(
                '/batch',
                '../../etc/passwd',
                '//classes//Thing',
                'http://evil.example/x',
                '/api/classes/Thing?where=%7B',
                '',
                '/classes/Thing/{row}',
              ),
              nameArb,
            ),
            body: poisonedBodyArb,
          })
          // A member that deletes the seeded row would be a valid write, not adversarial input.
          .filter((m) => !(String(m.method).toUpperCase() === 'DELETE' && String(m.path).includes('{row}'))),
        { maxLength: 4 },
      ),
      transaction: fc.oneof(fc.boolean(), fc.constant('yes')),
    }),
  }),
  fc.record({
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.constantFrom('/classes/Thing', '/batch', '/users', '/config'),
    rawBody: fc.oneof(
      fc.constantFrom(
        '{',
        '{"a":',
        'null',
        '"x"',
        '[1,2',
        '{"_method":"DELETE"}',
        '\u0000',
        '{"a":1,"a":{"__proto__":{"x":1}}}',
      ),
      fc.string({ maxLength: 50 }),
    ),
  }),
) as fc.Arbitrary<Req>;

describe('fuzzing every route with adversarial input', () => {
  let t: TestService;
  let snapshot: () => Promise<string>;

  beforeAll(async () => {
    t = await startService({ allowClientClassCreation: true });
    await t.request('POST', '/schemas/Thing', {
      as: 'master',
      body: {
        fields: {
          title: { type: 'String' },
          n: { type: 'Number' },
          tags: { type: 'Array' },
          o: { type: 'Object' },
          loc: { type: 'GeoPoint' },
          self: { type: 'Pointer', targetClass: 'Thing' },
        },
      },
    });
    const row = await t.request('POST', '/classes/Thing', {
      as: 'master',
      body: { title: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!', n: 1 },
    });
    await t.request('PUT', '/config', { as: 'master', body: { params: { kept: 1 } } });
    const rowId = row.json.objectId as string;
    snapshot = async () => {
      const schemas = (await t.request('GET', '/schemas', { as: 'master' })).json.results as Array<{
        className: string;
      }>;
      const parts: unknown[] = [(await t.request('GET', '/config', { as: 'master' })).json];
      for (const s of schemas.sort((a, b) => a.className.localeCompare(b.className))) {
        const rows = await t.request('GET', `/classes/${s.className}`, {
          as: 'master',
          query: { limit: 1000, order: 'objectId' },
        });
        parts.push(s, rows.json);
      }
      return JSON.stringify(parts);
    };
    (t as unknown as { rowId: string }).rowId = rowId;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers below 500 with a code, stays up and fast, and changes nothing', async () => {
    const before = await snapshot();
    const rowId = (t as unknown as { rowId: string }).rowId;
    const healthTimes: number[] = [];
    let running = true;
    const health = (async () => {
      while (running) {
        const started = performance.now();
        const res = await fetch(`${t.url}/health`);
        expect(res.status).toBe(200);
        healthTimes.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    try {
      await fc.assert(
        fc.asyncProperty(requestArb, async (req) => {
          const path = req.path.replace('{row}', rowId);
          let target = `${t.url}${path}`;
          const query: Record<string, string> = {};
          for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) query[k] = v;
          // A GET carries its parameters in the query string.
          if (req.method === 'GET' && req.body !== undefined) {
            for (const [k, v] of Object.entries(req.body as object))
              query[k] = typeof v === 'string' ? v : JSON.stringify(v);
          }
          if (Object.keys(query).length) target += `?${new URLSearchParams(query)}`;
          const headers: Record<string, string> = { ...credentialHeaders(req.as ?? 'rest') };
          let body: string | undefined;
          if (req.rawBody !== undefined) body = req.rawBody;
          else if (req.body !== undefined && req.method !== 'GET')
            body = JSON.stringify(req.body).replaceAll('{row}', rowId);
          if (body !== undefined) headers['Content-Type'] = 'application/json';
          const res = await fetch(target, { method: req.method, headers, body });
          const text = await res.text();
          expect(res.status, `${req.method} ${path}: ${text.slice(0, 300)}`).toBeLessThan(500);
          expect(text).not.toMatch(/at .+\.ts:\d+/);
          if (res.status >= 400) {
            const json = JSON.parse(text);
            expect(typeof json.code, text.slice(0, 200)).toBe('number');
            expect(typeof json.error).toBe('string');
          }
        }),
        { numRuns: 400, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
      );
    } finally {
      running = false;
      await health;
    }
    const after = await snapshot();
    if (after !== before) {
      let i = 0;
      while (after[i] === before[i]) i++;
      // Name the first difference: where in the store something changed.
      expect(after.slice(Math.max(0, i - 300), i + 300)).toBe(before.slice(Math.max(0, i - 300), i + 300));
    }
    const sorted = [...healthTimes].sort((a, b) => a - b);
    expect(sorted.length).toBeGreaterThan(10);
    // /health keeps answering fast throughout: 95 % within 100 ms (a loaded CI machine may pause now and then).
    expect(sorted[Math.floor(sorted.length * 0.95)]!).toBeLessThan(100);
    expect(sorted[sorted.length - 1]!).toBeLessThan(1000);
  });
});
