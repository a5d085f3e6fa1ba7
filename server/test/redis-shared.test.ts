import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadOptions, OptionError, validateOptions } from '../src/config/options.ts';
import { RedisRateLimitStore } from '../src/http/rate-limit.ts';
import { createService } from '../src/index.ts';
import { RedisTickLock, type TickLock } from '../src/jobs/scheduler.ts';
import { silentLogger } from '../src/kernel/log.ts';
import type { Row } from '../src/kernel/records.ts';
import { RedisLink } from '../src/redis/link.ts';
import { RedisLockoutStore } from '../src/users/lockout.ts';
import { REDIS_URL, redisAnswers, testPrefix } from './helpers/redis.ts';
import { freshSchema, startService, TEST_DATABASE_URL, type TestService } from './helpers/service.ts';

/**
 * What several instances share through Redis (option `redisURL`): login failures and lockout, rate
 * limit counters, and the claim of a scheduled tick. Two services on one store and one key prefix
 * (unique per file, deleted after) stand for two instances; each use falls back to the instance's
 * memory while Redis does not answer.
 */
const available = await redisAnswers();
if (!available) console.log(`redis-shared: skipped, no Redis answers at ${REDIS_URL}`);

const LOCKED = {
  code: 101,
  error: 'Your account is locked due to multiple failed login attempts. Please try again after 1 minute(s).',
};
const BAD_LOGIN = { code: 101, error: 'Invalid username/password.' };
const BASE_ENV = { BDS_APP_ID: 'app', BDS_MASTER_KEY: 'master-key-123' };
/** Nothing listens there: a Redis that does not answer. */
const DEAD_REDIS = 'redis://127.0.0.1:1';

describe.skipIf(!available)('shared through Redis by two instances', () => {
  let space: ReturnType<typeof testPrefix>;
  let dataDir: string;
  let dropSchema: (() => Promise<void>) | undefined;
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    space = testPrefix();
    dataDir = mkdtempSync(path.join(tmpdir(), 'bds-redis-shared-'));
    let databaseURI: string | undefined;
    if (TEST_DATABASE_URL) {
      const schema = await freshSchema(TEST_DATABASE_URL);
      databaseURI = schema.uri;
      dropSchema = schema.drop;
    }
    const options = {
      dataDir,
      ...(databaseURI ? { databaseURI } : {}),
      redisURL: REDIS_URL,
      redis: { keyPrefix: space.prefix },
      accountLockout: { threshold: 3, duration: 60 },
      rateLimit: [{ path: '^/functions/limited$', methods: ['POST'], window: 60, max: 3, by: 'ip' }],
      idempotency: { paths: ['classes/.*'], ttl: 60 },
    };
    a = await startService(options);
    b = await startService(options);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropSchema?.();
    await space?.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const logIn = (t: TestService, username: string, password: string) =>
    t.request('POST', '/login', { body: { username, password } });
  const signUp = async (username: string) => {
    const res = await a.request('POST', '/users', { body: { username, password: 'right-password' } });
    expect(res.status, res.text).toBe(201);
  };

  it('counts failed logins on every instance together, and locks the account on all of them', async () => {
    await signUp('erin');
    for (const t of [a, a, b]) {
      const res = await logIn(t, 'erin', 'wrong');
      expect(res.status).toBe(404);
      expect(res.json).toEqual(BAD_LOGIN);
    }
    for (const t of [a, b]) {
      const res = await logIn(t, 'erin', 'right-password');
      expect(res.status).toBe(404);
      expect(res.json).toEqual(LOCKED);
    }
    // The login name is hashed in the key: no address or name in Redis's key space.
    const keys = await space.admin.keys(`${space.prefix}lockout:*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain('erin');
  });

  it('forgets the failures counted elsewhere once a login succeeds on any instance', async () => {
    await signUp('fred');
    for (const t of [a, b]) expect((await logIn(t, 'fred', 'wrong')).json).toEqual(BAD_LOGIN);
    expect((await logIn(b, 'fred', 'right-password')).status).toBe(200);
    for (const t of [a, b]) expect((await logIn(t, 'fred', 'wrong')).json).toEqual(BAD_LOGIN);
    // Four failures in all, but never three since the success.
    const res = await logIn(a, 'fred', 'right-password');
    expect(res.status, res.text).toBe(200);
  });

  it('answers 159 on one instance for a request id claimed on the other (claims are rows of the store)', async () => {
    const headers = { 'X-Backend-Request-Id': 'shared-req-1' };
    const first = await a.request('POST', '/classes/Once', { as: 'master', headers, body: { n: 1 } });
    expect(first.status, first.text).toBe(201);
    const again = await b.request('POST', '/classes/Once', { as: 'master', headers, body: { n: 1 } });
    expect(again.status).toBe(400);
    expect(again.json).toEqual({ code: 159, error: 'Duplicate request' });
    expect((await b.request('GET', '/classes/Once', { as: 'master' })).json.results).toHaveLength(1);
  });

  it('counts a rate limit over every instance: the fourth request in the window answers 429 wherever it lands', async () => {
    for (const t of [a, b, a]) {
      const res = await t.request('POST', '/functions/limited', { body: {} });
      // Counted, then refused for what it is (no such function): the limit comes first.
      expect(res.json).toEqual({ code: 141, error: 'Invalid function: "limited"' });
    }
    const res = await b.request('POST', '/functions/limited', { body: {} });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(res.json).toEqual({
      code: 155,
      error: 'Too many requests: at most 3 in 60 seconds. Retry in 60 seconds.',
    });
    expect(await space.admin.keys(`${space.prefix}ratelimit:*`)).toHaveLength(1);
  });
});

describe.skipIf(!available)('the Redis stores one by one', () => {
  let space: ReturnType<typeof testPrefix>;
  const links: RedisLink[] = [];
  /** A link to Redis, connected; or one to a Redis that does not answer. */
  const link = async (url = REDIS_URL) => {
    const made = new RedisLink(url, space.prefix, silentLogger());
    links.push(made);
    if (url === REDIS_URL) await made.connect();
    return made;
  };
  beforeEach(() => {
    space = testPrefix();
  });
  afterEach(async () => {
    for (const l of links.splice(0)) await l.close();
    await space.cleanup();
  });

  /** A tick lock that says yes and counts how often it was asked. */
  const counting = () => {
    const asked: number[] = [];
    const lock: TickLock = {
      claim: async (_schedule, tick) => {
        asked.push(tick);
        return true;
      },
    };
    return { lock, asked };
  };
  const schedule: Row = { objectId: 'sched1' };

  it('claims a tick once across instances (SET NX PX per schedule and tick), then asks the store', async () => {
    const store = counting();
    const first = new RedisTickLock(await link(), store.lock);
    const second = new RedisTickLock(await link(), store.lock);
    const answers = await Promise.all([
      first.claim(schedule, 1000, 2000),
      second.claim(schedule, 1000, 2000),
    ]);
    expect(answers.sort()).toEqual([false, true]);
    expect(store.asked).toEqual([1000]);
    expect(await second.claim(schedule, 2000, 3000)).toBe(true);
    expect(await first.claim(schedule, 2000, 3000)).toBe(false);
    expect(await first.claim({ objectId: 'sched2' }, 2000, 3000)).toBe(true);
    expect(store.asked).toEqual([1000, 2000, 2000]);
    const ttl = await space.admin.pttl(`${space.prefix}tick:sched1:1000`);
    expect(ttl).toBeGreaterThan(9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000);
  });

  it('lets the tick go again when the store fails to move the schedule on', async () => {
    let fail = true;
    const asked: number[] = [];
    const flaky: TickLock = {
      claim: async (_schedule, tick) => {
        asked.push(tick);
        if (fail) throw new Error('store away');
        return true;
      },
    };
    const lock = new RedisTickLock(await link(), flaky);
    await expect(lock.claim(schedule, 1000, 2000)).rejects.toThrow('store away');
    fail = false;
    expect(await lock.claim(schedule, 1000, 2000)).toBe(true);
    expect(asked).toEqual([1000, 1000]);
  });

  it('leaves the tick to the store while Redis does not answer', async () => {
    const store = counting();
    const lock = new RedisTickLock(await link(DEAD_REDIS), store.lock);
    expect(await lock.claim(schedule, 1000, 2000)).toBe(true);
    expect(store.asked).toEqual([1000]);
  });

  it('counts rate limits in a fixed window from the first hit; in memory while Redis does not answer', async () => {
    const shared = new RedisRateLimitStore(await link());
    const now = Date.now();
    const first = await shared.hit('0:ip:1.2.3.4', 500, now);
    expect(first.count).toBe(1);
    expect(first.resetAt).toBeGreaterThan(now + 400);
    expect(first.resetAt).toBeLessThanOrEqual(now + 500);
    expect((await new RedisRateLimitStore(await link()).hit('0:ip:1.2.3.4', 500, now)).count).toBe(2);
    await new Promise((r) => setTimeout(r, 600));
    expect((await shared.hit('0:ip:1.2.3.4', 500, Date.now())).count).toBe(1);

    const alone = new RedisRateLimitStore(await link(DEAD_REDIS));
    expect((await alone.hit('k', 60_000, now)).count).toBe(1);
    expect(await alone.hit('k', 60_000, now)).toEqual({ count: 2, resetAt: now + 60_000 });
  });

  it('locks at the threshold and forgets on success; in memory while Redis does not answer', async () => {
    for (const url of [REDIS_URL, DEAD_REDIS]) {
      const store = new RedisLockoutStore(await link(url));
      const until = Date.now() + 60_000;
      await store.fail('user:x', 2, until);
      expect(await store.lockedUntil('user:x')).toBe(0);
      await store.fail('user:x', 2, until);
      expect(await store.lockedUntil('user:x')).toBe(until);
      await store.clear('user:x');
      expect(await store.lockedUntil('user:x')).toBe(0);
    }
  });
});

describe('the redisURL option', () => {
  const BASE = { appId: 'app', masterKey: 'master-key-123' };

  it('is off by default, and read from BDS_REDIS_URL', () => {
    expect(validateOptions(BASE).redisURL).toBeUndefined();
    const { options } = loadOptions(
      { ...BASE_ENV, BDS_REDIS_URL: 'redis://cache.internal:6380/2' },
      undefined,
    );
    expect(options.redisURL).toBe('redis://cache.internal:6380/2');
    expect(options.redis).toEqual({ streamMaxLen: 100_000 });
  });

  it('refuses what is not a redis:// or rediss:// address, naming the option', () => {
    expect(() => validateOptions({ ...BASE, redisURL: 'http://cache:6379' })).toThrow(
      new OptionError('redisURL', 'must be redis://<host>:<port> or rediss://<host>:<port>'),
    );
    expect(() => validateOptions({ ...BASE, redis: { streamMaxLen: 10 } })).toThrow(OptionError);
  });

  it('stops the service at start when Redis does not answer (the store is closed again)', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-redis-dead-'));
    try {
      await expect(
        createService({ ...BASE, dataDir, logLevel: 'silent', redisURL: DEAD_REDIS }),
      ).rejects.toThrow('Redis (option redisURL) does not answer: connect ECONNREFUSED 127.0.0.1:1');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
