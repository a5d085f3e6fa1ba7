import type { Redis } from 'ioredis';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { RedisLink } from '../redis/link.ts';

export interface LockoutPolicy {
  threshold: number;
  /** Seconds. */
  duration: number;
}

/** Where failed logins are counted: in memory (one instance), or in Redis (every instance). */
export interface LockoutStore {
  /** Until when `key` is locked (ms since the epoch); 0 when it is not. */
  lockedUntil(key: string): Promise<number>;
  /** Counts a failure; at `threshold` failures the key is locked until `until` and counting starts over. */
  fail(key: string, threshold: number, until: number): Promise<void>;
  /** Forgets the failures and the lock of `key`. */
  clear(key: string): Promise<void>;
}

export class MemoryLockoutStore implements LockoutStore {
  private readonly entries = new Map<string, { failures: number; until: number }>();

  lockedUntil(key: string): Promise<number> {
    return Promise.resolve(this.entries.get(key)?.until ?? 0);
  }

  fail(key: string, threshold: number, until: number): Promise<void> {
    if (this.entries.size > 50_000) this.prune();
    const entry = this.entries.get(key) ?? { failures: 0, until: 0 };
    entry.failures += 1;
    if (entry.failures >= threshold) {
      entry.until = until;
      entry.failures = 0;
    }
    this.entries.set(key, entry);
    return Promise.resolve();
  }

  clear(key: string): Promise<void> {
    this.entries.delete(key);
    return Promise.resolve();
  }

  private prune(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) if (entry.until < now) this.entries.delete(key);
  }
}

/** Failures are forgotten a day after the last one (the in-memory store forgets them on a restart). */
const FAILURES_TTL_MS = 24 * 3600 * 1000;

/**
 * One hash per key (`f` failures, `u` locked until), counted atomically by a script, expiring a day
 * after the last failure or a minute after the lock ends. The lock's end is compared with this
 * instance's clock, as in memory. While Redis does not answer, the instance counts in memory.
 */
const FAIL = `
local n = redis.call('HINCRBY', KEYS[1], 'f', 1)
if n >= tonumber(ARGV[1]) then redis.call('HSET', KEYS[1], 'f', 0, 'u', ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
`;

export class RedisLockoutStore implements LockoutStore {
  private readonly fallback = new MemoryLockoutStore();
  private readonly redis: Redis;

  constructor(private readonly link: RedisLink) {
    this.redis = link.client;
  }

  private key(key: string): string {
    // Hashed: login names (email addresses) stay out of Redis's key space.
    return this.link.hashedKey('lockout', key);
  }

  private shared<T>(work: () => Promise<T>, alone: () => Promise<T>): Promise<T> {
    return this.link.shared('lockout', work, alone);
  }

  lockedUntil(key: string): Promise<number> {
    return this.shared(
      async () => Number((await this.redis.hget(this.key(key), 'u')) ?? 0),
      () => this.fallback.lockedUntil(key),
    );
  }

  fail(key: string, threshold: number, until: number): Promise<void> {
    const ttl = Math.max(FAILURES_TTL_MS, until - Date.now() + 60_000);
    return this.shared(
      async () => {
        await this.redis.eval(FAIL, 1, this.key(key), threshold, until, ttl);
      },
      () => this.fallback.fail(key, threshold, until),
    );
  }

  clear(key: string): Promise<void> {
    return this.shared(
      async () => {
        await this.redis.del(this.key(key));
      },
      () => this.fallback.clear(key),
    );
  }
}

/**
 * Account lockout after repeated failed logins (option `accountLockout`). Failures are counted per
 * login name whether or not an account exists, so the lockout answer tells nothing about existence.
 * Kept in memory, or with `redisURL` in Redis, shared by every instance.
 */
export class Lockout {
  private readonly store: LockoutStore;

  constructor(
    private readonly policy: LockoutPolicy | undefined,
    redis?: RedisLink,
  ) {
    this.store = redis ? new RedisLockoutStore(redis) : new MemoryLockoutStore();
  }

  /** Throws while `key` is locked. */
  async check(key: string): Promise<void> {
    if (!this.policy) return;
    const until = await this.store.lockedUntil(key);
    if (until === 0) return;
    const left = until - Date.now();
    if (left > 0) {
      const minutes = Math.max(1, Math.ceil(left / 60_000));
      throw new BdsError(
        ErrorCode.OBJECT_NOT_FOUND,
        `Your account is locked due to multiple failed login attempts. Please try again after ${minutes} minute(s).`,
      );
    }
    await this.store.clear(key);
  }

  async fail(key: string): Promise<void> {
    if (!this.policy) return;
    await this.store.fail(key, this.policy.threshold, Date.now() + this.policy.duration * 1000);
  }

  async succeed(key: string): Promise<void> {
    if (!this.policy) return;
    await this.store.clear(key);
  }
}
