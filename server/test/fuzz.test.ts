import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialHeaders, KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * Adversarial input on every route of the service (server/src/http/routes/*.ts: classes and the
 * aliases users, roles, installations, sessions; login, logout, the current user and session,
 * password reset and verification requests; config; schemas and purge; batch; events; functions,
 * jobs and cloudCode; hooks; files upload, download, delete and orphans; push; aggregate;
 * analytics; devMailbox; the realtime trace; serverInfo; the account pages for reset and verify), with wrong types,
 * huge numbers, deep nesting, unicode, control characters and NUL in names and values, SQL
 * metacharacters, prototype names, duplicate keys in raw JSON text, oversized arrays, bodies over
 * `maxUploadSize`, URLs over 16 KB, backtracking patterns and odd batch paths.
 *
 * Each generated request says what it may answer:
 * - `bad`: malformed by construction; a 4xx JSON error `{code, error}` with a numeric code;
 * - `any`: a read (or a write that cannot change anything) that may happen to be valid: a 2xx JSON
 *   answer or a 4xx JSON error with a code;
 * - `batch`: a 2xx array whose every slot is `{success}` or `{error: {code, error}}`, or a 4xx error;
 * - `tooLarge`: a body over `maxUploadSize`: exactly 413 with code 116 (130 for a file upload);
 * - `page`: an account page (HTML by design): 400 or 404, an HTML page.
 * Never a 5xx, never a stack trace, never a body of another kind. Write bodies are made invalid by
 * construction (each carries at least one poisoned part), and no generated request can change the
 * store: a master read before and after (every class's schema and rows, the config, the hooks, the
 * orphan files) must be identical. `/health` is sampled concurrently during the whole run.
 */

const MAX_UPLOAD = 64 * 1024;

const PROTOTYPE = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];
const WEIRD = [
  '',
  ' ',
  'a b',
  '1abc',
  "x'; DROP TABLE Thing; --",
  "' OR 1=1 --",
  'x"y',
  'x\u0000y',
  '\u0001\u001f\u007f',
  'ünïcødé',
  '😀',
  '\ud800',
  '\u202e',
  '$where',
  'a.b.c',
  '..',
  '../..',
  '%00',
  '%',
  'x'.repeat(5000),
  'sqlite_master',
  '_SCHEMA',
  '_GlobalConfig',
  '_Hooks',
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
    ...WEIRD.filter((w) => w !== '$where' && w !== 'a.b.c' && !/^[A-Za-z_]\w*$/.test(w)),
  ),
  fc.string({ minLength: 1, maxLength: 6 }).map((s) => `9${s}`),
  fc.constant('f'.repeat(200)),
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
    'x\u0000y',
    "'; DROP TABLE _User; --",
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
    { __type: 'File', name: '../../etc/passwd' },
    { __op: 'Increment', amount: 'a lot' },
    { __op: 'Nope' },
    { __op: 'AddRelation', objects: [1, 2] },
    new Array(5_000).fill(0),
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
    { title: { $regex: '(a|aa)+$' } },
    { title: { $regex: '^(a+)+$' } },
    { title: { $regex: '(a)\\1' } },
    { title: { $regex: '(?=a)' } },
    { title: { $regex: 'x'.repeat(2000) } },
    { title: { $regex: 'a', $options: 'gz' } },
    { $or: [] },
    { $and: 'x' },
    { title: { $nope: 1 } },
    { loc: { $nearSphere: { latitude: 'x' } } },
    { objectId: { $containedBy: [] } },
    { constructor: 1 },
    { 'o.__proto__': 1 },
    { self: nested(60, { $inQuery: { className: 'Thing', where: {} } }) },
    { n: { $in: new Array(20_000).fill(1) } },
    { $relatedTo: { object: { __type: 'Pointer', className: 'Nope', objectId: 'x' }, key: '__proto__' } },
  ),
);

const queryArb = fc.record(
  {
    where: fc.oneof(
      whereArb.map((w) => JSON.stringify(w)),
      fc.constantFrom('{', 'null', '[]', '"x"', '{"a":1,"a":2}', '{"title":{"$regex":"a"},"title":1}'),
    ),
    order: fc.oneof(nameArb, fc.constantFrom('-', '-constructor', 'a,b,,c', 'title;DROP TABLE x')),
    limit: fc.oneof(
      fc.constantFrom('99999999999999999999', '-1', '1.5', 'x', '0x10'),
      fc.integer().map(String),
    ),
    skip: fc.oneof(fc.constantFrom('99999999999999999999', '-1', '1e400', 'x'), fc.integer().map(String)),
    keys: nameArb,
    excludeKeys: nameArb,
    include: fc.oneof(nameArb, fc.constant(Array(50).fill('self').join('.'))),
    count: fc.constantFrom('1', 'yes', '2'),
    [String('unknown')]: fc.string(),
  },
  { requiredKeys: [] },
);

type Expect = 'bad' | 'any' | 'batch' | 'tooLarge' | 'page';
type As = 'master' | 'rest' | 'js' | 'app' | 'none' | 'session' | 'badSession';
type Req = {
  method: string;
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  as?: As;
  expect: Expect;
};

/** A path segment; a lone surrogate (not encodable) becomes its raw UTF-8 bytes, invalid UTF-8. */
const enc = (n: string) => {
  try {
    return encodeURIComponent(n || 'x');
  } catch {
    return '%ED%A0%80';
  }
};
/** Classes the setup made or the service keeps: a master-key delete or purge must never name one. */
const KEPT = [
  'Thing',
  'Other',
  '_User',
  '_Role',
  '_Session',
  '_Installation',
  '_PushStatus',
  '_JobStatus',
  '_Hooks',
];
const classArb = fc.oneof(fc.constant('Thing'), fc.constant('Other'), nameArb.map(enc));
const idArb = fc.oneof(fc.constant('{row}'), nameArb.map(enc));
const asArb = fc.constantFrom<As>('master', 'rest', 'js', 'none', 'app', 'session', 'badSession');
const userAsArb = fc.constantFrom<As>('rest', 'js', 'none', 'session', 'badSession');
/** A class or hook name that names nothing the setup made (a valid name or not). */
const strangerArb = nameArb.filter((n) => !KEPT.includes(n) && !KEPT.includes(enc(n)));

const r = <T extends Record<string, fc.Arbitrary<unknown>>>(expect: Expect, fields: T) =>
  fc.record(fields).map((x) => ({ ...x, expect }) as unknown as Req);

/** Classes and the built-in aliases. */
const classRoutes = [
  r('any', {
    method: fc.constant('GET'),
    path: fc.oneof(
      classArb.map((c) => `/classes/${c}`),
      fc.constantFrom(
        '/users',
        '/roles',
        '/installations',
        '/sessions',
        '/classes/_User',
        '/classes/_Session',
      ),
    ),
    query: queryArb,
    as: asArb,
  }),
  r('any', {
    method: fc.constant('GET'),
    path: fc.oneof(
      fc.tuple(classArb, idArb).map(([c, i]) => `/classes/${c}/${i}`),
      fc
        .tuple(fc.constantFrom('users', 'roles', 'installations', 'sessions'), idArb)
        .map(([a, i]) => `/${a}/${i}`),
    ),
    query: queryArb,
    as: asArb,
  }),
  r('bad', {
    method: fc.constant('POST'),
    path: fc.oneof(
      classArb.map((c) => `/classes/${c}`),
      fc.constantFrom('/roles', '/installations', '/sessions', '/classes/_Role', '/classes/_Installation'),
    ),
    body: poisonedBodyArb,
    as: asArb,
  }),
  r('bad', {
    method: fc.constant('PUT'),
    path: fc.oneof(
      fc.tuple(classArb, idArb).map(([c, i]) => `/classes/${c}/${i}`),
      fc
        .tuple(fc.constantFrom('users', 'roles', 'installations', 'sessions'), idArb)
        .map(([a, i]) => `/${a}/${i}`),
      fc.constant('/users/{user}'),
    ),
    body: poisonedBodyArb,
    as: asArb,
  }),
  r('bad', {
    method: fc.constant('DELETE'),
    path: fc.oneof(
      fc.tuple(classArb, nameArb.map(enc)).map(([c, i]) => `/classes/${c}/${i}`),
      fc
        .tuple(fc.constantFrom('users', 'roles', 'installations', 'sessions'), nameArb.map(enc))
        .map(([a, i]) => `/${a}/${i}`),
    ),
    as: asArb,
  }),
  // A delete of a real row without the right: refused.
  r('bad', {
    method: fc.constant('DELETE'),
    path: fc.constantFrom('/classes/Thing/{row}', '/users/{user}', '/classes/_User/{user}'),
    as: fc.constantFrom<As>('rest', 'js', 'none', 'app', 'badSession'),
  }),
  // Methods a route does not have.
  r('bad', {
    method: fc.constantFrom('PATCH', 'OPTIONS_', 'DELETE', 'PUT'),
    path: fc.constantFrom('/classes/Thing', '/users', '/login', '/batch', '/health2', '/nowhere/at/all'),
    as: asArb,
  }),
];

/** Users, sessions, login, logout, mail requests. */
const userRoutes = [
  r('bad', {
    method: fc.constant('POST'),
    path: fc.constantFrom('/users', '/classes/_User'),
    body: poisonedBodyArb.map((b) => ({ ...b, username: 'fuzzed', password: 'pw' })),
    as: asArb,
  }),
  r('bad', {
    method: fc.constant('POST'),
    path: fc.constantFrom('/users', '/classes/_User'),
    body: fc.oneof(
      fc.record({
        username: valueArb.filter((v) => typeof v !== 'string' || v === ''),
        password: fc.constant('pw'),
      }),
      fc.record({
        username: fc.constant('fuzzed2'),
        password: valueArb.filter((v) => typeof v !== 'string' || v === ''),
      }),
      fc.record({ username: fc.constant('fuzzuser'), password: fc.constant('again') }),
      fc.record({
        username: fc.constant('fuzzed3'),
        password: fc.constant('pw'),
        authData: fc.dictionary(nameArb, valueArb, { minKeys: 1, maxKeys: 2 }),
      }),
    ),
    as: userAsArb,
  }),
  r('bad', {
    method: fc.constantFrom('POST', 'GET'),
    path: fc.constant('/login'),
    body: fc.oneof(
      fc.dictionary(nameArb, valueArb, { maxKeys: 3 }),
      fc.record({
        username: fc.constantFrom('fuzzuser', "fuzzuser' OR '1'='1", 'fuzzuser\u0000'),
        password: valueArb,
      }),
    ),
    as: asArb,
  }),
  r('any', {
    method: fc.constant('POST'),
    path: fc.constant('/logout'),
    body: fc.dictionary(nameArb, valueArb, { maxKeys: 2 }),
    // Not the fuzz user's own session: logging it out would be a valid change.
    as: fc.constantFrom<As>('rest', 'js', 'none', 'master', 'badSession'),
  }),
  r('any', {
    method: fc.constant('POST'),
    path: fc.constantFrom('/requestPasswordReset', '/verificationEmailRequest'),
    body: fc.oneof(
      fc.dictionary(nameArb, valueArb, { maxKeys: 2 }),
      fc.record({
        email: fc.oneof(valueArb, fc.constantFrom('x@y', "a'@b.c", 'a@b.c\u0000', `${'a'.repeat(300)}@b.c`)),
      }),
    ),
    as: asArb,
  }),
  r('any', {
    method: fc.constant('GET'),
    path: fc.constantFrom('/users/me', '/sessions/me', '/sessions', '/serverInfo', '/health'),
    query: queryArb,
    as: asArb,
  }),
];

const configRoutes = [
  r('any', { method: fc.constant('GET'), path: fc.constant('/config'), as: asArb }),
  r('bad', {
    method: fc.constant('PUT'),
    path: fc.constant('/config'),
    as: asArb,
    body: fc.oneof(
      fc.dictionary(
        nameArb.filter((n) => n !== 'params'),
        valueArb,
      ),
      fc.record({ params: fc.dictionary(badParamArb, valueArb, { minKeys: 1 }) }),
      fc.record({
        params: fc.constant({ ok: 1 }),
        masterKeyOnly: fc
          .dictionary(nameArb, scalarArb, { minKeys: 1 })
          .filter((d) => Object.values(d).some((v) => typeof v !== 'boolean')),
      }),
      fc.record({ params: fc.oneof(scalarArb, fc.array(scalarArb)) }),
    ),
  }),
];

const schemaRoutes = [
  r('any', {
    method: fc.constant('GET'),
    path: fc.oneof(
      fc.constant('/schemas'),
      classArb.map((c) => `/schemas/${c}`),
    ),
    as: asArb,
  }),
  // Without the master key every schema write is refused, whatever the body.
  r('bad', {
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.oneof(
      classArb.map((c) => `/schemas/${c}`),
      fc.constant('/schemas'),
    ),
    as: fc.constantFrom<As>('rest', 'js', 'none', 'app', 'session', 'badSession'),
    body: fc.oneof(
      fc.record({ fields: fc.dictionary(nameArb, valueArb, { minKeys: 1, maxKeys: 3 }) }),
      fc.record({ fields: fc.constant({ title: { type: 'Number' } }) }),
      fc.record({ classLevelPermissions: fc.dictionary(nameArb, valueArb, { minKeys: 1 }) }),
      fc.record({ indexes: fc.dictionary(nameArb, valueArb, { minKeys: 1 }) }),
      scalarArb,
    ),
  }),
  // With the master key, only bodies no class accepts (a random dictionary or a new class's name
  // could make a valid schema, and a master write would then rightly succeed).
  r('bad', {
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.oneof(
      classArb.map((c) => `/schemas/${c}`),
      fc.constant('/schemas'),
    ),
    as: fc.constant<As>('master'),
    body: fc.oneof(
      fc.record({
        className: nameArb,
        fields: fc.dictionary(badFieldArb, fc.constant({ type: 'String' }), { minKeys: 1 }),
      }),
      fc.record({ fields: fc.constant({ title: { type: 'NoSuchType' } }) }),
      fc.record({ classLevelPermissions: fc.constant({ find: 'everyone' }) }),
      scalarArb,
    ),
  }),
  // Deleting a class or purging its rows: refused without the master key, whatever the name.
  r('bad', {
    method: fc.constant('DELETE'),
    path: fc.tuple(fc.constantFrom('schemas', 'purge'), classArb).map(([p, c]) => `/${p}/${c}`),
    as: fc.constantFrom<As>('rest', 'js', 'none', 'app', 'session', 'badSession'),
  }),
  // With the master key, only names of classes that do not exist: nothing to delete.
  r('any', {
    method: fc.constant('DELETE'),
    path: fc.tuple(fc.constantFrom('schemas', 'purge'), strangerArb).map(([p, c]) => `/${p}/${enc(c)}`),
    as: fc.constant<As>('master'),
  }),
];

const oddPathArb = fc.oneof(
  fc.constantFrom(
    '/batch',
    '../../etc/passwd',
    '//classes//Thing',
    'http://evil.example/x',
    '/api/classes/Thing?where=%7B',
    '/api/api/classes/Thing',
    '',
    '?',
    '/classes/Thing/{row}',
    '/classes/Thing/{row}/../../schemas/Thing',
    '/schemas/Thing',
    '/purge/Thing',
    '/users/{user}',
    '/files/x.txt',
    '/classes/Thing/%ZZ',
    '/classes/\u0000',
  ),
  nameArb,
);

const batchRoutes = [
  r('batch', {
    method: fc.constant('POST'),
    path: fc.constant('/batch'),
    as: asArb,
    body: fc.record({
      requests: fc.array(
        fc.oneof(
          fc.record({
            method: fc.constantFrom('POST', 'PUT', 'post', 'put'),
            path: oddPathArb,
            body: poisonedBodyArb,
          }),
          fc.record({
            method: fc.constantFrom('GET', 'get'),
            path: oddPathArb,
            body: fc.oneof(queryArb, scalarArb),
          }),
          fc.record({
            method: fc.constantFrom('DELETE', 'PATCH', 'HEAD', 1, null),
            // A member that deletes a real row or class would be a valid write, not adversarial input.
            path: oddPathArb.filter((p) => !/\{row\}|\{user\}|^\/(schemas|purge)\//.test(p)),
          }),
          valueArb,
        ),
        { maxLength: 4 },
      ),
      transaction: fc.oneof(fc.boolean(), fc.constant('yes')),
    }),
  }),
  r('bad', {
    method: fc.constant('POST'),
    path: fc.constant('/batch'),
    as: asArb,
    body: fc.oneof(
      scalarArb,
      fc.record({ requests: fc.oneof(scalarArb, fc.dictionary(nameArb, valueArb)) }),
      fc.record({ requests: fc.constant([]), transaction: fc.constantFrom('yes', 1, null) }),
      fc.constant({
        requests: [
          { method: 'POST', path: '/classes/Thing', body: { title: 'valid' } },
          { method: 'POST', path: '/classes/Thing', body: { '9bad': 1 } },
        ],
        transaction: true,
      }),
    ),
  }),
  // Over the batch limit (100 members) without the master key.
  r('bad', {
    method: fc.constant('POST'),
    path: fc.constant('/batch'),
    as: fc.constantFrom<As>('rest', 'js', 'session'),
    body: fc.integer({ min: 101, max: 500 }).map((n) => ({
      requests: Array.from({ length: n }, () => ({ method: 'GET', path: '/classes/Thing' })),
    })),
  }),
];

const cloudRoutes = [
  r('any', {
    method: fc.constant('POST'),
    path: nameArb.map((n) => `/events/${enc(n)}`),
    body: fc.oneof(
      fc.dictionary(nameArb, valueArb, { maxKeys: 2 }),
      fc.record({ dimensions: valueArb, at: valueArb }),
    ),
    as: asArb,
  }),
  // No function and no job is registered.
  r('bad', {
    method: fc.constant('POST'),
    path: fc.tuple(fc.constantFrom('functions', 'jobs'), nameArb).map(([k, n]) => `/${k}/${enc(n)}`),
    body: fc.oneof(fc.dictionary(nameArb, valueArb, { maxKeys: 2 }), scalarArb),
    as: asArb,
  }),
  r('any', { method: fc.constant('GET'), path: fc.constant('/cloudCode'), as: asArb }),
];

const hookRoutes = [
  r('any', {
    method: fc.constant('GET'),
    path: fc.oneof(
      fc.constantFrom('/hooks/functions', '/hooks/triggers', '/hooks/deliveries'),
      nameArb.map((n) => `/hooks/functions/${enc(n)}`),
      fc.tuple(classArb, nameArb).map(([c, t]) => `/hooks/triggers/${c}/${enc(t)}`),
    ),
    query: fc.dictionary(
      fc.constantFrom('limit', 'kind', 'status', 'className', 'nope', '__proto__'),
      fc.string(),
    ),
    as: asArb,
  }),
  r('bad', {
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.oneof(
      fc.constantFrom('/hooks/functions', '/hooks/triggers'),
      nameArb.map((n) => `/hooks/functions/${enc(n)}`),
      fc.tuple(classArb, nameArb).map(([c, t]) => `/hooks/triggers/${c}/${enc(t)}`),
    ),
    body: fc.oneof(
      fc.dictionary(nameArb, valueArb, { maxKeys: 3 }),
      fc.record({
        functionName: nameArb,
        url: fc.constantFrom('ftp://x', 'javascript:alert(1)', 'not a url', '', 'http://'),
      }),
      fc.record({
        className: nameArb,
        triggerName: fc.constantFrom('beforeNope', '__proto__', ''),
        url: fc.constant('https://example.com/h'),
      }),
      scalarArb,
    ),
    as: asArb,
  }),
  r('any', {
    method: fc.constant('DELETE'),
    path: fc.oneof(
      nameArb.map((n) => `/hooks/functions/${enc(n)}`),
      fc.tuple(classArb, nameArb).map(([c, t]) => `/hooks/triggers/${c}/${enc(t)}`),
    ),
    as: asArb,
  }),
];

/** File names the upload refuses: outside `^[_a-zA-Z0-9][a-zA-Z0-9@. ~_-]*$` or over 128 characters. */
const FILE_NAME = /^[_a-zA-Z0-9][a-zA-Z0-9@. ~_-]*$/;
const badFileNameArb = fc.oneof(
  fc.constantFrom(
    '.hidden',
    '-x',
    'a$b',
    'x\u0000y',
    'ünï',
    '😀',
    "x'y",
    'x"y',
    'a%00',
    'x'.repeat(129),
    '..',
    'a/b',
  ),
  nameArb.filter((n) => n !== '' && (!FILE_NAME.test(n) || n.length > 128)),
);

const fileRoutes = [
  r('bad', {
    method: fc.constant('POST'),
    path: badFileNameArb.map((n) => `/files/${enc(n)}`),
    rawBody: fc.string({ maxLength: 200 }),
    contentType: fc.constantFrom('text/plain', 'application/octet-stream', 'image/png; x="y"', 'x'),
    as: asArb,
  }),
  r('bad', {
    method: fc.constantFrom('GET', 'HEAD'),
    path: fc
      .tuple(fc.oneof(fc.constant(KEYS.appId), nameArb.map(enc)), nameArb.map(enc))
      .map(([a, n]) => `/files/${a}/${n}`),
    as: fc.constant<As>('none'),
  }),
  r('any', {
    method: fc.constant('DELETE'),
    path: nameArb.map((n) => `/files/${enc(n)}`),
    as: asArb,
  }),
  r('any', { method: fc.constant('GET'), path: fc.constant('/files/orphans'), as: asArb }),
];

const masterRoutes = [
  // Push is not configured; a body is refused before that for a non-master caller.
  r('bad', {
    method: fc.constant('POST'),
    path: fc.constant('/push'),
    body: fc.oneof(
      fc.dictionary(nameArb, valueArb, { maxKeys: 3 }),
      fc.record({ where: whereArb, data: valueArb }),
      scalarArb,
    ),
    as: asArb,
  }),
  r('any', {
    method: fc.constant('POST'),
    path: classArb.map((c) => `/aggregate/${c}`),
    body: fc.record({
      pipeline: fc.oneof(
        fc.array(
          fc.dictionary(
            fc.constantFrom(
              '$match',
              '$group',
              '$project',
              '$sort',
              '$limit',
              '$skip',
              '$out',
              '$merge',
              '$lookup',
              '$nope',
              '__proto__',
            ),
            valueArb,
            { minKeys: 1, maxKeys: 1 },
          ),
          { maxLength: 3 },
        ),
        valueArb,
      ),
    }),
    as: asArb,
  }),
  r('any', {
    method: fc.constant('GET'),
    path: classArb.map((c) => `/aggregate/${c}`),
    query: fc.record({
      pipeline: fc.oneof(
        fc.string(),
        valueArb.map((v) => JSON.stringify(v) ?? 'x'),
      ),
    }),
    as: asArb,
  }),
  r('any', {
    method: fc.constant('GET'),
    path: fc.constant('/analytics/events'),
    query: fc.dictionary(
      fc.constantFrom('name', 'from', 'to', 'by', 'interval', 'limit', '__proto__', 'x'),
      fc.oneof(fc.string(), fc.constantFrom('99999999999999999999', '-1', 'hour', 'day', '2020-13-45')),
    ),
    as: asArb,
  }),
  r('any', { method: fc.constant('GET'), path: fc.constant('/devMailbox'), as: asArb }),
  r('any', { method: fc.constant('GET'), path: classArb.map((c) => `/live/trace/${c}`), as: asArb }),
];

/** The account pages (HTML by design): no token in any form is valid. */
const pageRoutes = [
  r('page', {
    method: fc.constant('GET'),
    path: fc
      .tuple(fc.oneof(fc.constant(KEYS.appId), nameArb.map(enc)), fc.constantFrom('reset', 'verify_email'))
      .map(([a, p]) => `/apps/${a}/${p}`),
    query: fc.record(
      {
        token: fc.oneof(
          fc.string(),
          fc.constantFrom('0'.repeat(64), 'f'.repeat(64), "' OR 1=1 --", 'x'.repeat(10_000)),
        ),
      },
      { requiredKeys: [] },
    ),
    as: fc.constant<As>('none'),
  }),
  r('page', {
    method: fc.constant('POST'),
    path: fc.constant(`/apps/${KEYS.appId}/reset`),
    rawBody: fc.oneof(
      fc
        .record(
          {
            token: fc.oneof(fc.string(), fc.constant('a'.repeat(64))),
            new_password: fc.string(),
            confirm_password: fc.string(),
          },
          { requiredKeys: [] },
        )
        .map((f) => new URLSearchParams(f as Record<string, string>).toString()),
      fc.constantFrom('%', 'token=%ZZ', 'token=a&token=b', 'x'.repeat(17 * 1024), '\u0000'),
    ),
    contentType: fc.constantFrom('application/x-www-form-urlencoded', 'application/json', 'text/plain'),
    as: fc.constant<As>('none'),
  }),
];

/** Bodies over `maxUploadSize`: 413 with code 116, whatever the route and the credentials. */
const tooLargeRoutes = [
  r('tooLarge', {
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.constantFrom(
      '/classes/Thing',
      '/classes/Thing/{row}',
      '/batch',
      '/users',
      '/config',
      '/schemas/Thing',
      '/functions/f',
      '/login',
      '/events/e',
    ),
    rawBody: fc
      .integer({ min: 1, max: 4096 })
      .map((extra) => `{"title":"${'x'.repeat(MAX_UPLOAD + extra)}"}`),
    as: asArb,
  }),
  r('tooLarge', {
    method: fc.constant('POST'),
    path: fc.constantFrom('/classes/Thing', '/batch'),
    rawBody: fc
      .integer({ min: 0, max: 100 })
      .map((extra) => JSON.stringify({ tags: new Array(MAX_UPLOAD / 2 + extra).fill(0) })),
    as: asArb,
  }),
  r('tooLarge', {
    method: fc.constant('POST'),
    path: fc.constantFrom('/files/big.bin', '/files/ok.txt'),
    rawBody: fc.integer({ min: 1, max: 4096 }).map((extra) => 'x'.repeat(MAX_UPLOAD + extra)),
    contentType: fc.constant('application/octet-stream'),
    // Callers allowed to upload (public uploads are off by default: 130 before the size is known).
    as: fc.constantFrom<As>('master', 'session'),
  }),
];

/** JSON text no write route accepts: malformed, or duplicate keys (the last wins) each with a poisoned part. */
const rawBodyArb = fc.oneof(
  fc.constantFrom(
    '{',
    '{"a":',
    'null',
    '"x"',
    '[1,2',
    '[]',
    '\u0000',
    '{"title":"a","title":"b","9bad":1}',
    '{"title":"a","__proto__":{"polluted":1}}',
    '{"a":1,"a":{"__proto__":{"x":1}}}',
    '{"constructor":{"prototype":{"polluted":1}}}',
    '{"n":1,"n":{"__op":"Nope"},"9bad":1}',
    '{"fields":{"x":{"type":"String"}},"fields":"dup","9bad":1}',
    '{"params":{"a":1},"params":{"b c":1},"9bad":1}',
    '{"requests":[],"requests":"dup","9bad":1}',
    `{"o":${'['.repeat(5000)}${']'.repeat(5000)}}`,
    '\ufeff{"title":1,"9bad":2}',
  ),
  // Anything after `[` is an array or no JSON at all: never a valid body for these routes.
  fc.string({ maxLength: 50 }).map((s) => `[${s}`),
);

/** Raw JSON text: malformed, duplicate keys (each with a poisoned part), a URL over 16 KB. */
const rawRoutes = [
  r('bad', {
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.constantFrom('/classes/Thing', '/classes/Thing/{row}', '/batch', '/users', '/config', '/roles'),
    rawBody: rawBodyArb,
    as: asArb,
  }),
  // A schema document ignores keys it does not know (`title`, `9bad`): with the master key such a
  // body may answer 200, but it changes nothing (the snapshot shows it).
  r('any', {
    method: fc.constantFrom('POST', 'PUT'),
    path: fc.constantFrom('/schemas/Thing', '/schemas/Other'),
    rawBody: rawBodyArb,
    as: asArb,
  }),
  r('bad', {
    method: fc.constantFrom('GET', 'POST'),
    path: fc.constantFrom('/classes/Thing', '/users', '/config'),
    query: fc.integer({ min: 17 * 1024, max: 40 * 1024 }).map((n) => ({ where: 'x'.repeat(n) })),
    as: asArb,
  }),
];
const requestArb: fc.Arbitrary<Req> = fc.oneof(
  ...classRoutes,
  ...userRoutes,
  ...configRoutes,
  ...schemaRoutes,
  ...batchRoutes,
  ...cloudRoutes,
  ...hookRoutes,
  ...fileRoutes,
  ...masterRoutes,
  ...pageRoutes,
  ...tooLargeRoutes,
  ...rawRoutes,
);

/** The first path segment of every route of the service (server/src/http/routes/*.ts). */
const ROUTES = [
  'classes',
  'users',
  'roles',
  'installations',
  'sessions',
  'login',
  'logout',
  'requestPasswordReset',
  'verificationEmailRequest',
  'config',
  'schemas',
  'purge',
  'batch',
  'events',
  'functions',
  'jobs',
  'cloudCode',
  'hooks',
  'files',
  'push',
  'aggregate',
  'analytics',
  'devMailbox',
  'live',
  'apps',
  'serverInfo',
  'health',
];

/** The /health bounds: the issue's 100 ms on the median; a loaded 2-core machine may pause now and then. */
const HEALTH_MEDIAN_MS = 100;
const HEALTH_MAX_MS = 1000;

describe('fuzzing every route with adversarial input', () => {
  let t: TestService;
  let ids: { row: string; user: string; session: string };
  let snapshot: () => Promise<string>;

  beforeAll(async () => {
    t = await startService({
      allowClientClassCreation: true,
      maxUploadSize: MAX_UPLOAD,
      passwordHashCost: 12,
    });
    for (const className of ['Thing', 'Other']) {
      await t.request('POST', `/schemas/${className}`, {
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
    }
    const row = await t.request('POST', '/classes/Thing', {
      as: 'master',
      // Readable by anyone, writable by no one but the master key: deleting it is always refused.
      body: {
        title: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!',
        n: 1,
        tags: ['a'],
        o: { x: 1 },
        ACL: { '*': { read: true } },
      },
    });
    await t.request('POST', '/classes/Other', {
      as: 'master',
      body: { title: 'private', ACL: {} },
    });
    const user = await t.request('POST', '/users', { body: { username: 'fuzzuser', password: 'pw-1234' } });
    await t.request('PUT', '/config', {
      as: 'master',
      body: { params: { kept: 1 }, masterKeyOnly: { kept: false } },
    });
    ids = { row: row.json.objectId, user: user.json.objectId, session: user.json.sessionToken };
    snapshot = async () => {
      const schemas = (await t.request('GET', '/schemas', { as: 'master' })).json.results as Array<{
        className: string;
      }>;
      const parts: unknown[] = [
        (await t.request('GET', '/config', { as: 'master' })).json,
        (await t.request('GET', '/hooks/functions', { as: 'master' })).json,
        (await t.request('GET', '/hooks/triggers', { as: 'master' })).json,
        (await t.request('GET', '/files/orphans', { as: 'master' })).json,
      ];
      for (const s of schemas.sort((a, b) => a.className.localeCompare(b.className))) {
        const rows = await t.request('GET', `/classes/${s.className}`, {
          as: 'master',
          query: { limit: 1000, order: 'objectId' },
        });
        parts.push(s, rows.json);
      }
      return JSON.stringify(parts);
    };
  });
  afterAll(async () => {
    await t?.close();
  });

  const fill = (text: string) =>
    text.replaceAll('{row}', ids.row).replaceAll('{user}', ids.user).replaceAll('%7Brow%7D', ids.row);

  async function send(req: Req): Promise<{ status: number; text: string; type: string }> {
    const path = fill(req.path);
    let target = `${t.url}${path}`;
    const query: Record<string, string> = {};
    const put = (k: string, v: unknown) => {
      if (v !== undefined) query[k] = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
    };
    for (const [k, v] of Object.entries(req.query ?? {})) put(k, v);
    // A GET carries its parameters in the query string.
    if (req.method === 'GET' && req.body !== undefined && typeof req.body === 'object' && req.body !== null)
      for (const [k, v] of Object.entries(req.body)) put(k, v);
    if (Object.keys(query).length) target += `${path.includes('?') ? '&' : '?'}${new URLSearchParams(query)}`;
    const as = req.as ?? 'rest';
    const headers: Record<string, string> = {
      ...credentialHeaders(as === 'session' || as === 'badSession' ? 'rest' : as),
    };
    if (as === 'session') headers['X-Backend-Session-Token'] = ids.session;
    if (as === 'badSession') headers['X-Backend-Session-Token'] = "r:nope' OR 1=1 --";
    let body: string | undefined;
    if (req.rawBody !== undefined) body = req.rawBody;
    else if (req.body !== undefined && req.method !== 'GET' && req.method !== 'HEAD')
      body = fill(JSON.stringify(req.body) ?? 'null');
    if (body !== undefined) headers['Content-Type'] = req.contentType ?? 'application/json';
    const res = await fetch(target, { method: req.method, headers, body });
    const text = await res.text();
    return { status: res.status, text, type: res.headers.get('content-type') ?? '' };
  }

  /** A JSON error: a numeric code and a text. */
  const isError = (v: unknown) =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { code?: unknown }).code === 'number' &&
    typeof (v as { error?: unknown }).error === 'string';

  function check(req: Req, res: { status: number; text: string; type: string }): void {
    const label = `${req.expect}: ${req.method} ${req.path} as ${req.as}: ${res.status} ${res.text.slice(0, 300)}`;
    expect(res.status, label).toBeLessThan(500);
    expect(res.text, label).not.toMatch(/at .+\.[jt]s:\d+|node_modules|SqliteError|TypeError/);
    if (req.expect === 'page' && res.type.startsWith('text/html')) {
      // The pages answer HTML: an invalid link or an unknown app, never a 2xx. (A path such as
      // `/apps/../reset`, normalised by the client, reaches the API instead: a JSON error below.)
      expect([400, 404], label).toContain(res.status);
      return;
    }
    if (req.method === 'HEAD') {
      expect(res.status, label).toBeGreaterThanOrEqual(400);
      return;
    }
    expect(res.type, label).toMatch(/^application\/json/);
    let json: unknown;
    expect(() => {
      json = JSON.parse(res.text);
    }, label).not.toThrow();
    const ok = res.status >= 200 && res.status < 300;
    if (!ok) {
      expect(res.status, label).toBeGreaterThanOrEqual(400);
      expect(isError(json), label).toBe(true);
    }
    switch (req.expect) {
      case 'bad':
      case 'page':
        expect(ok, label).toBe(false);
        break;
      case 'tooLarge':
        expect(res.status, label).toBe(413);
        // A JSON body over the limit: 116; a file upload: 130 (the file error code, docs/protocol.md#errors).
        expect((json as { code: number }).code, label).toBe(req.path.startsWith('/files/') ? 130 : 116);
        break;
      case 'batch':
        if (ok) {
          expect(Array.isArray(json), label).toBe(true);
          for (const slot of json as Array<Record<string, unknown>>) {
            const keys = Object.keys(slot);
            expect(
              keys.length === 1 && (keys[0] === 'success' || (keys[0] === 'error' && isError(slot.error))),
              label,
            ).toBe(true);
          }
        }
        break;
      case 'any':
        break;
    }
  }

  it('answers 2xx or a 4xx JSON error with a code, stays up and fast, and changes nothing', async () => {
    const before = await snapshot();
    const health: number[] = [];
    let running = true;
    const sampler = (async () => {
      while (running) {
        const started = performance.now();
        const res = await fetch(`${t.url}/health`);
        await res.text();
        const ms = performance.now() - started;
        expect(res.status).toBe(200);
        health.push(ms);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const counts: Record<string, number> = {};
    const reached = new Set<string>();
    const started = performance.now();
    try {
      await fc.assert(
        fc.asyncProperty(requestArb, async (req) => {
          counts[req.expect] = (counts[req.expect] ?? 0) + 1;
          reached.add(req.path.split('/')[1] ?? '');
          check(req, await send(req));
        }),
        {
          numRuns: Number(process.env.FUZZ_RUNS ?? 4000),
          // A new seed on every local run finds new inputs; CI runs a fixed one so that a
          // finding is reproduced here rather than failing a landing by chance.
          seed: Number(process.env.FUZZ_SEED ?? (process.env.CI ? 20261126 : Date.now() % 2 ** 31)),
        },
      );
    } finally {
      running = false;
      await sampler;
    }
    const fuzzMs = performance.now() - started;
    // Every route family was tried.
    expect([...ROUTES].filter((route) => !reached.has(route))).toEqual([]);

    // Still up: an ordinary read answers.
    expect((await t.request('GET', '/classes/Thing', { as: 'rest' })).status).toBe(200);
    const after = await snapshot();
    if (after !== before) {
      let i = 0;
      while (after[i] === before[i]) i++;
      // Name the first difference: where in the store something changed.
      expect(after.slice(Math.max(0, i - 300), i + 300)).toBe(before.slice(Math.max(0, i - 300), i + 300));
    }

    const sorted = [...health].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
    const figures = {
      runs: counts,
      fuzzSeconds: Math.round(fuzzMs / 100) / 10,
      healthSamples: sorted.length,
      medianMs: Math.round(at(0.5) * 10) / 10,
      p95Ms: Math.round(at(0.95) * 10) / 10,
      p99Ms: Math.round(at(0.99) * 10) / 10,
      maxMs: Math.round(sorted[sorted.length - 1]! * 10) / 10,
    };
    if (process.env.FUZZ_REPORT) console.log(JSON.stringify(figures));
    expect(sorted.length).toBeGreaterThan(50);
    // Every sample answered 200 (above). The issue's 100 ms holds for the median and the 95th
    // percentile; the single slowest sample gets 1 s, since on a shared 2-core machine the test
    // process itself is paused now and then (measured: median 1-3 ms, p95 5-25 ms, max 50-220 ms).
    expect(figures.medianMs, JSON.stringify(figures)).toBeLessThan(HEALTH_MEDIAN_MS);
    expect(figures.p95Ms, JSON.stringify(figures)).toBeLessThan(HEALTH_MEDIAN_MS);
    expect(figures.maxMs, JSON.stringify(figures)).toBeLessThan(HEALTH_MAX_MS);
  }, 120_000); // 4,000 requests: 10 to 15 s alone, more beside other test files
});
