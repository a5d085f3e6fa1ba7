import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MemoryRateLimitStore,
  RateLimiter,
  type RateLimitHit,
  type RateLimitStore,
} from '../src/http/rate-limit.ts';
import { Router } from '../src/http/router.ts';
import { anonymous, MASTER } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import { startService, type TestResponse, type TestService } from './helpers/service.ts';

/**
 * The default rate limits (option `rateLimit` left out): sign-up 30 a minute per address, password
 * reset and verification mail 5 a minute per address (one counter for both). Over the limit: 429,
 * code 155, the text naming the limit and the wait, and `Retry-After` with the same number of
 * seconds; nothing is written. The master key is never limited.
 */

/** A refusal for being over the limit: 429, code 155, the exact text, Retry-After matching it. */
function expectLimited(res: TestResponse, max: number, window: number): void {
  expect(res.status).toBe(429);
  const retry = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retry)).toBe(true);
  expect(retry).toBeGreaterThanOrEqual(1);
  expect(retry).toBeLessThanOrEqual(window);
  expect(res.json).toEqual({
    code: 155,
    error: `Too many requests: at most ${max} in ${window} seconds. Retry in ${retry} seconds.`,
  });
}

describe('default rate limits: sign-up', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ rateLimit: undefined, passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const users = async () =>
    (await t.request('GET', '/users', { as: 'master', query: { count: 1, limit: 0 } })).json.count as number;

  it('30 sign-ups a minute from one address; the 31st answers 429 (155) and creates nothing', async () => {
    for (let i = 0; i < 30; i++) {
      // Both paths of sign-up count against the one limit.
      const res = await t.request('POST', i % 2 ? '/users' : '/classes/_User', {
        body: { username: `u${i}`, password: 'pw' },
      });
      expect(res.status).toBe(201);
    }
    const over = await t.request('POST', '/users', { body: { username: 'u30', password: 'pw' } });
    expectLimited(over, 30, 60);
    expectLimited(
      await t.request('POST', '/classes/_User', { body: { username: 'u31', password: 'pw' } }),
      30,
      60,
    );
    expect(await users()).toBe(30);
  });

  it('a sign-up in a batch counts too and is refused in its slot', async () => {
    const res = await t.request('POST', '/batch', {
      body: { requests: [{ method: 'POST', path: '/users', body: { username: 'b1', password: 'pw' } }] },
    });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(1);
    expect(res.json[0].error.code).toBe(155);
    expect(res.json[0].error.error).toMatch(
      /^Too many requests: at most 30 in 60 seconds\. Retry in \d+ seconds\.$/,
    );
    expect(await users()).toBe(30);
  });

  it('other routes and reads of _User are not limited', async () => {
    for (let i = 0; i < 35; i++) expect((await t.request('GET', '/users')).status).toBe(200);
  });

  it('the master key signs up past the limit', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', '/users', {
        as: 'master',
        body: { username: `m${i}`, password: 'pw' },
      });
      expect(res.status).toBe(201);
    }
    expect(await users()).toBe(33);
  });
});

describe('default rate limits: password reset and verification mail', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ rateLimit: undefined, passwordHashCost: 12 });
    await t.request('POST', '/users', { body: { username: 'mail', password: 'pw', email: 'm@example.com' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('5 mail requests a minute per address, reset and verification together; the 6th answers 429', async () => {
    const paths = [
      '/requestPasswordReset',
      '/verificationEmailRequest',
      '/requestPasswordReset',
      '/verificationEmailRequest',
      '/requestPasswordReset',
    ];
    for (const p of paths) {
      const res = await t.request('POST', p, { body: { email: 'm@example.com' } });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({});
    }
    expectLimited(
      await t.request('POST', '/verificationEmailRequest', { body: { email: 'm@example.com' } }),
      5,
      60,
    );
    expectLimited(
      await t.request('POST', '/requestPasswordReset', { body: { email: 'm@example.com' } }),
      5,
      60,
    );
  });

  it('a refused request is counted before its body is looked at (a malformed one too)', async () => {
    expectLimited(await t.request('POST', '/requestPasswordReset', { body: { email: 5 } }), 5, 60);
  });

  it('the master key is never limited: mail requests, login and sign-up far past every maximum', async () => {
    for (let i = 0; i < 10; i++) {
      for (const p of ['/requestPasswordReset', '/verificationEmailRequest']) {
        const res = await t.request('POST', p, { as: 'master', body: { email: 'm@example.com' } });
        expect(res.status).toBe(200);
      }
    }
    for (let i = 0; i < 35; i++) {
      const res = await t.request('POST', '/login', {
        as: 'master',
        body: { username: 'mail', password: 'pw' },
      });
      expect(res.status).toBe(200);
    }
    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        requests: Array.from({ length: 35 }, (_, i) => ({
          method: 'POST',
          path: '/users',
          body: { username: `batch${i}`, password: 'pw' },
        })),
      },
    });
    expect(batch.status).toBe(200);
    expect(batch.json.filter((r: { success?: unknown }) => r.success)).toHaveLength(35);
  });
});

/** A store that answers later, as one shared over the network would; it counts its calls. */
class SlowSharedStore implements RateLimitStore {
  calls = 0;
  private readonly inner = new MemoryRateLimitStore();
  async hit(key: string, windowMs: number, now: number): Promise<RateLimitHit> {
    this.calls++;
    await new Promise((r) => setTimeout(r, 5));
    return this.inner.hit(key, windowMs, now);
  }
}

describe('the store interface is asynchronous', () => {
  const rule = { path: '^/login$', window: 60, max: 2, by: 'ip' as const };
  const req = (caller = anonymous(), path = '/login') => ({
    method: 'POST',
    path,
    ctx: ctxOf(caller, 'rest', '10.0.0.7'),
  });

  it('two instances sharing one store count together', async () => {
    const store = new SlowSharedStore();
    const a = new RateLimiter([rule], store, () => 1_000);
    const b = new RateLimiter([rule], store, () => 1_000);
    await a.check(req());
    await b.check(req());
    await expect(a.check(req())).rejects.toThrow(
      'Too many requests: at most 2 in 60 seconds. Retry in 60 seconds.',
    );
    await expect(b.check(req())).rejects.toMatchObject({ code: 155, retryAfter: 60 });
    expect(store.calls).toBe(4);
  });

  it('a route without a limit and the master key get no promise and never reach the store', () => {
    const store = new SlowSharedStore();
    const limiter = new RateLimiter([rule], store);
    expect(limiter.check(req(anonymous(), '/classes/Thing'))).toBeUndefined();
    expect(limiter.check({ ...req(), method: 'GET', path: '/classes/Thing' })).toBeUndefined();
    expect(limiter.check(req(MASTER))).toBeUndefined();
    expect(new RateLimiter([], store).check(req())).toBeUndefined();
    expect(store.calls).toBe(0);
  });

  it('rules are counted in order; the first one over its maximum stops the later ones', async () => {
    const store = new SlowSharedStore();
    const limiter = new RateLimiter(
      [
        { ...rule, max: 1 },
        { path: '^/log', window: 60, max: 100, by: 'ip' },
      ],
      store,
      () => 0,
    );
    await limiter.check(req());
    expect(store.calls).toBe(2);
    await expect(limiter.check(req())).rejects.toThrow('at most 1 in 60 seconds');
    expect(store.calls).toBe(3);
  });

  it('the router waits for the store and does not run a refused handler', async () => {
    const store = new SlowSharedStore();
    const limiter = new RateLimiter([{ ...rule, max: 1 }], store);
    let ran = 0;
    const router = new Router((r) => limiter.check(r));
    router.add('POST', '/login', async () => {
      ran++;
      return { body: {} };
    });
    const request = { ...req(), method: 'POST' as const, query: {}, body: {}, inBatch: false };
    await router.dispatch(request);
    await expect(router.dispatch(request)).rejects.toMatchObject({ code: 155 });
    expect(ran).toBe(1);
  });
});
