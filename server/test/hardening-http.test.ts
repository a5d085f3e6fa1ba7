import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore, RateLimiter } from '../src/http/rate-limit.ts';
import { createHttpServer } from '../src/http/server.ts';
import { createService } from '../src/index.ts';
import { anonymous, MASTER, makeCaller } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import { KEYS, ON_POSTGRES, startService, type TestService } from './helpers/service.ts';

describe('rate limits, on by default for login, sign-up, password reset and verification mail', () => {
  let t: TestService;
  beforeAll(async () => {
    // The suites' helper turns the limits off; this one keeps the defaults.
    t = await startService({ rateLimit: undefined });
    await t.request('POST', '/users', {
      body: { username: 'limited', password: 'pw', email: 'l@example.com' },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the 31st login from one address in a minute answers 429, code 155, with Retry-After', async () => {
    for (let i = 0; i < 29; i++) {
      const res = await t.request('POST', '/login', {
        body: { username: 'limited', password: i % 2 ? 'pw' : 'wrong' },
      });
      expect(res.status).not.toBe(429);
    }
    const last = await t.request('GET', '/login', { query: { username: 'limited', password: 'pw' } });
    expect(last.status).toBe(200);
    const over = await t.request('POST', '/login', { body: { username: 'limited', password: 'pw' } });
    expect(over.status).toBe(429);
    expect(over.json.code).toBe(155);
    expect(over.json.error).toMatch(/^Too many requests: at most 30 in 60 seconds\. Retry in \d+ seconds\.$/);
    const retry = Number(over.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
  });

  it('batch members count one by one, so a batch does not get around the limit', async () => {
    const res = await t.request('POST', '/batch', {
      body: { requests: [{ method: 'POST', path: '/login', body: { username: 'limited', password: 'pw' } }] },
    });
    expect(res.status).toBe(200);
    expect(res.json[0].error.code).toBe(155);
  });

  it('the master key is not limited', async () => {
    const res = await t.request('POST', '/login', {
      as: 'master',
      body: { username: 'limited', password: 'pw' },
    });
    expect(res.status).toBe(200);
  });

  it('password reset mail: the 6th request in a minute answers 429', async () => {
    for (let i = 0; i < 5; i++) {
      expect(
        (await t.request('POST', '/requestPasswordReset', { body: { email: 'l@example.com' } })).status,
      ).toBe(200);
    }
    const over = await t.request('POST', '/requestPasswordReset', { body: { email: 'l@example.com' } });
    expect(over.status).toBe(429);
    expect(over.json.code).toBe(155);
  });

  it('other routes are not limited by default', async () => {
    for (let i = 0; i < 40; i++) expect((await t.request('GET', '/classes/Anything')).status).toBe(200);
  });
});

describe('the rate limiter, with an injected clock', () => {
  const rule = { path: '^/classes/', window: 10, max: 2, by: 'user' as const };
  const user = makeCaller({ user: { objectId: 'u1' } });
  const req = (caller = user, ip = '10.0.0.1') => ({
    method: 'GET',
    path: '/classes/A',
    ctx: ctxOf(caller, 'rest', ip),
  });

  it('counts per key within a window and starts again after it', async () => {
    let now = 1_000_000;
    const limiter = new RateLimiter([rule], new MemoryRateLimitStore(), () => now);
    await limiter.check(req());
    await limiter.check(req());
    await expect(limiter.check(req())).rejects.toThrow(
      'Too many requests: at most 2 in 10 seconds. Retry in 10 seconds.',
    );
    // Another user is counted apart; an anonymous caller by address.
    await limiter.check(req(makeCaller({ user: { objectId: 'u2' } })));
    await limiter.check(req(anonymous(), '10.0.0.9'));
    now += 9_000;
    await expect(limiter.check(req())).rejects.toThrow('Retry in 1 seconds.');
    now += 1_000;
    await limiter.check(req());
  });

  it('skips other methods and paths, and the master key', async () => {
    const limiter = new RateLimiter([{ ...rule, methods: ['POST'], max: 1 }]);
    for (let i = 0; i < 5; i++) expect(limiter.check(req())).toBeUndefined();
    const post = { method: 'POST', path: '/classes/A', ctx: ctxOf(user, 'rest', '10.0.0.1') };
    await limiter.check(post);
    await expect(limiter.check(post)).rejects.toThrow('at most 1 in 10 seconds');
    expect(limiter.check({ ...post, ctx: ctxOf(MASTER, 'rest', '10.0.0.1') })).toBeUndefined();
    expect(limiter.check({ ...post, path: '/users' })).toBeUndefined();
  });

  it('a bad rule stops the start, naming the option', async () => {
    await expect(startService({ rateLimit: [{ path: '(', window: 1, max: 1 }] })).rejects.toThrow(
      'Invalid option "rateLimit.0.path": must be a valid regular expression',
    );
  });
});

describe('HTTP edges', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A raw request (fetch refuses some of these before sending). */
  const raw = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string; contentType: string | undefined }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: t.port, path, headers }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body, contentType: res.headers['content-type'] }),
        );
      });
      req.on('error', reject);
      req.end();
    });

  it('a URL over 16 KB gets the JSON error shape with 431', async () => {
    const res = await raw(`/api/classes/A?where=${'x'.repeat(20_000)}`);
    expect(res.status).toBe(431);
    expect(res.contentType).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual({
      code: 116,
      error: 'The request line and headers exceed the limit of 16384 bytes.',
    });
  });

  it('headers over 16 KB too', async () => {
    const res = await raw('/api/health', { 'X-Padding': 'y'.repeat(20_000) });
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body).code).toBe(116);
  });

  it('a server that listens before the service is ready answers 503 until it is', async () => {
    const http = createHttpServer();
    await new Promise<void>((resolve) => http.server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = http.server.address() as AddressInfo;
    try {
      const health = await fetch(`http://127.0.0.1:${port}/api/health`);
      expect(health.status).toBe(503);
      expect(await health.json()).toEqual({ status: 'starting' });
      const other = await fetch(`http://127.0.0.1:${port}/api/classes/A`);
      expect(other.status).toBe(503);
      expect(other.headers.get('retry-after')).toBe('1');
      expect(await other.json()).toEqual({ code: 100, error: 'The service is starting; retry shortly.' });
      const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-ready-'));
      const service = await createService({ ...KEYS, dataDir, logLevel: 'warn' });
      try {
        await service.listen(port, '127.0.0.1', http);
        const ready = await fetch(`http://127.0.0.1:${port}/api/health`);
        expect(ready.status).toBe(200);
        expect(await ready.json()).toEqual({ status: 'ok' });
      } finally {
        await service.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    } finally {
      if (http.server.listening) http.server.close();
    }
  });

  // A SQLite setting, read from SQLite's connection.
  it.skipIf(ON_POSTGRES)('sqliteSynchronous chooses NORMAL (default) or FULL', async () => {
    const synchronous = (s: TestService) =>
      (
        s.service.core.store as unknown as { driver: { writer: { pragma(q: string, o: object): number } } }
      ).driver.writer.pragma('synchronous', { simple: true });
    expect(synchronous(t)).toBe(1);
    const full = await startService({ sqliteSynchronous: 'full' });
    try {
      expect(synchronous(full)).toBe(2);
    } finally {
      await full.close();
    }
  });
});
