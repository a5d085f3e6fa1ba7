import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../src/config/options.ts';
import type { Core } from '../src/data/core.ts';
import { RateLimiter, type RateLimitHit, type RateLimitStore } from '../src/http/rate-limit.ts';
import { type ApiRequest, type Method, Router } from '../src/http/router.ts';
import { registerBatchRoute } from '../src/http/routes/batch.ts';
import { anonymous } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { expectLimited, raw } from './helpers/raw-http.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * Rate limits and option patterns decide on the one normal form of a path (client/src/protocol
 * paths.ts): `/login/`, `//login`, `/%6Cogin` and `/api//login` are the route `/login`, so they
 * are counted as it is, directly, in a batch and with or without the mount path in a member.
 * Uploads, downloads and account pages are counted too when a rule names them.
 */

/** A batch member refused by a limit: code 155 and the exact text (a batch has no Retry-After). */
function expectMemberLimited(result: any, max: number, window: number): void {
  expect(Object.keys(result)).toEqual(['error']);
  expect(result.error.code).toBe(155);
  const m = /^Too many requests: at most (\d+) in (\d+) seconds\. Retry in (\d+) seconds\.$/.exec(
    result.error.error,
  );
  expect(m).not.toBeNull();
  expect([Number(m![1]), Number(m![2])]).toEqual([max, window]);
  expect(Number(m![3]) >= 1 && Number(m![3]) <= window).toBe(true);
}

const LOGIN_SPELLINGS = [
  '/api/login/',
  '/api//login',
  '//api/login',
  '/api/%6Cogin',
  '/api/%6c%6F%67%69%6E',
  '/api/login//',
  '///api///login///',
  '/%61pi/login',
];
const MEMBER_LOGIN_SPELLINGS = [
  '/login/',
  '//login',
  '/%6Cogin',
  'login',
  '/api//login',
  '//api/login',
  '/api/login/',
  'api/login',
  '/%61pi/login',
];

describe('login: every spelling of /login counts against one limit', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ rateLimit: undefined, passwordHashCost: 12 });
    const made = await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'alice', password: 'right-password' },
    });
    expect(made.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('100 `/login/` members in one batch: the first 30 are tried, the other 70 answer 155', async () => {
    const res = await raw(t, 'POST', '/api/batch', {
      body: {
        requests: Array.from({ length: 100 }, () => ({
          method: 'POST',
          path: '/login/',
          body: { username: 'alice', password: 'wrong' },
        })),
      },
    });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(100);
    for (const result of res.json.slice(0, 30)) {
      expect(result).toEqual({ error: { code: 101, error: 'Invalid username/password.' } });
    }
    for (const result of res.json.slice(30)) expectMemberLimited(result, 30, 60);
  });

  it('once limited, /login and every other spelling answer 429 (155), the right password too', async () => {
    const right = { username: 'alice', password: 'right-password' };
    expectLimited(await raw(t, 'POST', '/api/login', { body: right }), 30, 60);
    for (const path of LOGIN_SPELLINGS) {
      expectLimited(await raw(t, 'POST', path, { body: right }), 30, 60);
    }
    expectLimited(await raw(t, 'GET', '/api/login/?username=alice&password=right-password'), 30, 60);
    expectLimited(await raw(t, 'GET', '/api//%6Cogin?username=alice&password=right-password'), 30, 60);
  });

  it('inside a batch, with or without the mount path, every spelling is refused in its slot', async () => {
    const res = await raw(t, 'POST', '/api/batch', {
      body: {
        requests: MEMBER_LOGIN_SPELLINGS.map((path) => ({
          method: 'POST',
          path,
          body: { username: 'alice', password: 'right-password' },
        })),
      },
    });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(MEMBER_LOGIN_SPELLINGS.length);
    for (const result of res.json) expectMemberLimited(result, 30, 60);
  });

  it('the master key is still never limited, whatever the spelling', async () => {
    for (const path of ['/api/login/', '/api//login']) {
      const res = await raw(t, 'POST', path, {
        as: 'master',
        body: { username: 'alice', password: 'right-password' },
      });
      expect(res.status).toBe(200);
      expect(res.json.username).toBe('alice');
    }
  });
});

describe('sign-up: /users/, /classes//_User and /classes/%5FUser are the sign-up routes', () => {
  let t: TestService;
  const SPELLINGS = [
    '/api/users/',
    '/api/classes//_User',
    '/api/classes/%5FUser',
    '//api/users',
    '/api/users',
    '/api/classes/_User/',
  ];
  beforeAll(async () => {
    t = await startService({ rateLimit: undefined, passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });
  const users = async () =>
    (await t.request('GET', '/users', { as: 'master', query: { count: 1, limit: 0 } })).json.count as number;

  it('30 sign-ups over the spellings, then every spelling answers 429 and creates nothing', async () => {
    for (let i = 0; i < 30; i++) {
      const res = await raw(t, 'POST', SPELLINGS[i % SPELLINGS.length]!, {
        body: { username: `u${i}`, password: 'pw' },
      });
      expect(res.status).toBe(201);
    }
    for (const [i, path] of SPELLINGS.entries()) {
      expectLimited(await raw(t, 'POST', path, { body: { username: `over${i}`, password: 'pw' } }), 30, 60);
    }
    const batch = await raw(t, 'POST', '/api/batch', {
      body: {
        requests: ['/users/', '/classes//_User', '/classes/%5FUser', '/api//users', 'api/classes/_User'].map(
          (path, i) => ({ method: 'POST', path, body: { username: `member${i}`, password: 'pw' } }),
        ),
      },
    });
    expect(batch.status).toBe(200);
    for (const result of batch.json) expectMemberLimited(result, 30, 60);
    expect(await users()).toBe(30);
  });
});

describe('password reset and verification mail: trailing and doubled slashes count', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ rateLimit: undefined, passwordHashCost: 12 });
    await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'mail', password: 'pw', email: 'm@example.com' },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('5 a minute over every spelling; then requestPasswordReset/ answers 429', async () => {
    const spellings = [
      '/api/requestPasswordReset/',
      '/api//requestPasswordReset',
      '/api/verificationEmailRequest/',
      '/api/%72equestPasswordReset',
      '/api/requestPasswordReset',
    ];
    for (const path of spellings) {
      const res = await raw(t, 'POST', path, { body: { email: 'm@example.com' } });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({});
    }
    for (const path of [...spellings, '/api/requestPasswordReset//', '//api/verificationEmailRequest']) {
      expectLimited(await raw(t, 'POST', path, { body: { email: 'm@example.com' } }), 5, 60);
    }
  });
});

describe('the path is normalised once, at the entry', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({
      cloud: CLOUD_MODULE,
      idempotency: { paths: ['classes/Post'] },
      allowClientClassCreation: true,
      fileUpload: { enableForPublic: true },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a malformed %-escape answers 400, code 107, naming its segment, for every kind of request', async () => {
    for (const [method, path, segment] of [
      ['GET', '/api/classes/Post/%E0%A4%A', '%E0%A4%A'],
      ['POST', '/api/%zz/login', '%zz'],
      ['POST', '/api/files/%zz', '%zz'],
      ['GET', '/api/files/test-app/%zz', '%zz'],
    ] as const) {
      const res = await raw(t, method, path, { body: method === 'POST' ? {} : undefined });
      expect([res.status, res.json]).toEqual([
        400,
        { code: 107, error: `Malformed path segment: ${segment}` },
      ]);
    }
  });

  it('a segment is decoded once: %2525 reaches the route as %25', async () => {
    const res = await raw(t, 'POST', '/api/functions/a%2525b', { body: {} });
    expect([res.status, res.json]).toEqual([400, { code: 141, error: 'Invalid function: "a%25b"' }]);
    const batch = await raw(t, 'POST', '/api/batch', {
      body: { requests: [{ method: 'POST', path: '/api//functions/a%2525b', body: {} }] },
    });
    expect(batch.json).toEqual([{ error: { code: 141, error: 'Invalid function: "a%25b"' } }]);
  });

  it('idempotency patterns match the normal form: a request id repeated on /classes//Post answers 159', async () => {
    const headers = { 'X-Backend-Request-Id': 'post-once-1' };
    const first = await raw(t, 'POST', '/api/classes//Post', { body: { n: 1 }, headers });
    expect(first.status).toBe(201);
    for (const path of ['/api/classes/Post/', '/api/classes//Post', '/api/classes/%50ost']) {
      const again = await raw(t, 'POST', path, { body: { n: 2 }, headers });
      expect([again.status, again.json]).toEqual([400, { code: 159, error: 'Duplicate request' }]);
    }
    const rows = await t.request('GET', '/classes/Post', { as: 'master', query: { count: 1, limit: 0 } });
    expect(rows.json.count).toBe(1);
  });
});

describe('uploads, downloads and pages are counted when a rule names them', () => {
  let t: TestService;
  let fileUrl: string;
  beforeAll(async () => {
    t = await startService({
      fileUpload: { enableForPublic: true },
      rateLimit: [
        { path: '^/files/[^/]+$', methods: ['POST'], window: 60, max: 2, by: 'ip' },
        { path: '^/files/[^/]+/[^/]+$', methods: ['GET'], window: 60, max: 3, by: 'ip' },
        { path: '^/apps/', window: 60, max: 1, by: 'ip' },
      ],
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const upload = (path: string, as: 'rest' | 'master' = 'rest') =>
    raw(t, 'POST', path, { as, bytes: { data: 'hello', type: 'text/plain' } });

  it('uploads: 2 a minute whatever the spelling; the master key is not limited', async () => {
    const first = await upload('/api/files/a.txt');
    expect(first.status).toBe(201);
    fileUrl = new URL(first.json.url).pathname;
    expect((await upload('/api//files/b.txt/')).status).toBe(201);
    expectLimited(await upload('/api/files/c.txt'), 2, 60);
    expectLimited(await upload('/api/%66iles//d.txt'), 2, 60);
    expect((await upload('/api/files/e.txt', 'master')).status).toBe(201);
  });

  it('downloads: 3 a minute whatever the spelling; the master key is not limited', async () => {
    const doubled = fileUrl.replace('/files/', '//files//');
    for (const path of [fileUrl, doubled, `${fileUrl}/`]) {
      expect((await raw(t, 'GET', path, { headers: {} })).status).toBe(200);
    }
    expectLimited(await raw(t, 'GET', fileUrl), 3, 60);
    expectLimited(await raw(t, 'GET', doubled), 3, 60);
    expect((await raw(t, 'GET', fileUrl, { as: 'master' })).status).toBe(200);
  });

  it('account pages: the rule names them and the second request answers 429', async () => {
    const first = await raw(t, 'GET', `/api/apps/${KEYS.appId}/reset?token=nothing`);
    expect(first.status).toBe(400);
    expectLimited(await raw(t, 'GET', `/api/apps//${KEYS.appId}/reset/?token=nothing`), 1, 60);
  });
});

/** Counts every hit (one per rule and key) and never refuses: the property asks only what was counted. */
class RecordingStore implements RateLimitStore {
  keys: string[] = [];
  hit(key: string, windowMs: number, now: number): Promise<RateLimitHit> {
    this.keys.push(key);
    return Promise.resolve({ count: 1, resetAt: now + windowMs });
  }
}

/** The limited routes of the default rules, with the index of the rule that limits each. */
const TARGETS: Array<{ method: Method; segments: string[]; rule: number }> = [
  { method: 'POST', segments: ['login'], rule: 0 },
  { method: 'GET', segments: ['login'], rule: 0 },
  { method: 'POST', segments: ['users'], rule: 1 },
  { method: 'POST', segments: ['classes', '_User'], rule: 1 },
  { method: 'POST', segments: ['requestPasswordReset'], rule: 2 },
  { method: 'POST', segments: ['verificationEmailRequest'], rule: 2 },
];

const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
/** One character as written, or %-escaped in upper or lower case. */
const spelledChar = (c: string) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(c) },
    { weight: 1, arbitrary: fc.constant(`%${hex(c).toUpperCase()}`) },
    { weight: 1, arbitrary: fc.constant(`%${hex(c).toLowerCase()}`) },
  );
const slashes = (min: number) => fc.integer({ min, max: 3 }).map((n) => '/'.repeat(n));
/**
 * A spelling of a route: extra slashes anywhere, trailing ones, %-escapes of any characters, and
 * sometimes a separator written as %2F (a path the router does not take to that route).
 */
const spelling = (segments: string[], leading = 0) =>
  fc
    .tuple(
      slashes(leading),
      fc.tuple(...segments.map((s) => fc.tuple(...[...s].map(spelledChar)).map((cs) => cs.join('')))),
      fc.array(fc.oneof({ weight: 9, arbitrary: slashes(1) }, { weight: 1, arbitrary: fc.constant('%2F') }), {
        minLength: segments.length,
        maxLength: segments.length,
      }),
      slashes(0),
    )
    .map(([lead, parts, separators, trail]) => {
      let path = lead;
      parts.forEach((part, i) => {
        path += (i === 0 ? '' : separators[i]!) + part;
      });
      return path + trail;
    });
const MOUNTS = ['', '/api/', '//api//', 'api/', '/%61pi/', '/%61%70%69/', '/API/'];

describe('property: every spelling the router takes to a limited route is counted by its rule', () => {
  const options = validateOptions({ appId: KEYS.appId, masterKey: KEYS.masterKey });
  const store = new RecordingStore();
  const limiter = new RateLimiter(options.rateLimit, store, () => 1_000);
  const router = new Router((req) => limiter.check(req));
  let reached: { route: string; params: Record<string, string> } | undefined;
  const ctx = ctxOf(anonymous(), 'rest', '10.9.8.7');

  beforeAll(async () => {
    // The real route table and the real batch route, with handlers that say which route ran.
    const t = await startService({ rateLimit: undefined });
    const routes = t.service.routes();
    await t.close();
    registerBatchRoute(router, { options } as unknown as Core);
    for (const { method, pattern } of routes) {
      if (pattern === '/batch') continue;
      router.add(method as Method, pattern, async (req: ApiRequest) => {
        reached = { route: `${method} ${pattern}`, params: req.params };
        return { body: {} };
      });
    }
  });

  /** Dispatches one request; answers the route and params it reached and the keys counted. */
  async function run(method: Method, path: string, inBatch: boolean) {
    reached = undefined;
    store.keys = [];
    const request = inBatch
      ? {
          method: 'POST' as const,
          path: '/batch',
          query: {},
          body: { requests: [{ method, path, body: {} }] },
        }
      : { method, path, query: {}, body: {} };
    try {
      await router.dispatch({ ...request, ctx, inBatch: false });
    } catch {
      // Unknown routes and methods: nothing reached, the property holds trivially.
    }
    return { reached, keys: store.keys };
  }

  it('direct requests and batch members, with and without the mount path', async () => {
    let taken = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc
          .constantFrom(...TARGETS)
          .chain((target) => fc.tuple(fc.constant(target), spelling(target.segments))),
        fc.boolean(),
        fc.constantFrom(...MOUNTS),
        async ([target, path], inBatch, mount) => {
          const reference = await run(target.method, `/${target.segments.join('/')}`, false);
          expect(reference.keys).toEqual([`${target.rule}:ip:10.9.8.7`]);
          const got = await run(target.method, inBatch ? `${mount}${path}` : path, inBatch);
          runs++;
          if (
            got.reached === undefined ||
            JSON.stringify(got.reached) !== JSON.stringify(reference.reached)
          ) {
            return;
          }
          taken++;
          expect(got.keys).toEqual([`${target.rule}:ip:10.9.8.7`]);
        },
      ),
      { numRuns: 600 },
    );
    // Most spellings do reach the route: the property is not vacuous.
    expect(taken).toBeGreaterThan(runs / 2);
  });
});

describe('property over HTTP: once limited, every spelling of /login answers 429', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({
      passwordHashCost: 12,
      rateLimit: [{ path: '^/login$', methods: ['GET', 'POST'], window: 60, max: 1, by: 'ip' }],
    });
    const first = await raw(t, 'POST', '/api/login', { body: { username: 'x', password: 'y' } });
    expect(first.json).toEqual({ code: 101, error: 'Invalid username/password.' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('direct requests (any spelling of the mount path too) and batch members', async () => {
    const login = spelling(['login'], 1).filter((p) => !p.includes('%2F'));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api', '//api', '/api/', '/%61pi', '/%61%70%69//'),
        login,
        fc.constantFrom(...MOUNTS.filter((m) => m !== '/API/')),
        async (mount, path, memberMount) => {
          const body = { username: 'x', password: 'y' };
          expectLimited(await raw(t, 'POST', `${mount}${path}`, { body }), 1, 60);
          const batch = await raw(t, 'POST', '/api/batch', {
            body: { requests: [{ method: 'POST', path: `${memberMount}${path}`, body }] },
          });
          expect(batch.status).toBe(200);
          expectMemberLimited(batch.json[0], 1, 60);
        },
      ),
      { numRuns: 25 },
    );
  });
});
