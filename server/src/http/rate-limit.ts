import type { ServiceOptions } from '../config/options.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { RedisLink } from '../redis/link.ts';

export type RateLimitRule = ServiceOptions['rateLimit'][number];

/** The hits counted in the current window of one key, and when that window ends (ms since the epoch). */
export interface RateLimitHit {
  count: number;
  resetAt: number;
}

/**
 * Counters of the rate limits: one per rule and key, reset when its window ends. The in-memory
 * store serves one instance; with `redisURL`, every instance counts in Redis (RedisRateLimitStore).
 */
export interface RateLimitStore {
  /** Counts one hit and answers the count in the current window (a new window starts at 1). */
  hit(key: string, windowMs: number, now: number): Promise<RateLimitHit>;
}

const MAX_KEYS = 100_000;

export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  hit(key: string, windowMs: number, now: number): Promise<RateLimitHit> {
    let entry = this.windows.get(key);
    if (!entry || entry.resetAt <= now) {
      if (this.windows.size >= MAX_KEYS) this.prune(now);
      entry = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, entry);
    }
    entry.count++;
    // A copy: the entry keeps counting while the caller waits for this answer.
    return Promise.resolve({ count: entry.count, resetAt: entry.resetAt });
  }

  private prune(now: number): void {
    for (const [key, entry] of this.windows) if (entry.resetAt <= now) this.windows.delete(key);
    // Still full of live windows (a flood of distinct keys): start over rather than grow.
    if (this.windows.size >= MAX_KEYS) this.windows.clear();
  }
}

/**
 * INCR with the window's expiry set by the hit that starts it (a fixed window from the first hit,
 * as in memory): answers the count and the milliseconds left in the window. KEYS: the counter.
 * ARGV: the window (ms).
 */
const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {n, left}
`;

/**
 * The counters in Redis (option `redisURL`), shared by every instance: a hit is counted wherever
 * it lands. While Redis does not answer, each instance counts in its own memory (a limit is not
 * lifted, only no longer shared).
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly fallback = new MemoryRateLimitStore();

  constructor(private readonly link: RedisLink) {
    // Sent once, then called by its hash (EVALSHA).
    link.client.defineCommand('bdsRateLimitHit', { numberOfKeys: 1, lua: HIT });
  }

  async hit(key: string, windowMs: number, now: number): Promise<RateLimitHit> {
    const client = this.link.client as unknown as {
      bdsRateLimitHit(key: string, windowMs: number): Promise<[number, number]>;
    };
    return this.link.shared(
      'rate limits',
      async () => {
        const [count, left] = await client.bdsRateLimitHit(
          // Hashed: a key may hold a session token.
          this.link.hashedKey('ratelimit', key),
          Math.max(1, Math.ceil(windowMs)),
        );
        return { count, resetAt: now + left };
      },
      () => this.fallback.hit(key, windowMs, now),
    );
  }
}

/** A request as the limiter sees it. */
export interface LimitedRequest {
  method: string;
  /** The path below the mount path, in its normal form (router.ts `requestPath`). */
  path: string;
  ctx: Ctx;
}

/**
 * Option `rateLimit`: per route pattern (a regular expression over the normal form of the path
 * below the mount path, so `/login/`, `//login` and `/%6Cogin` are all `/login`), methods, a window
 * in seconds and a maximum of requests per IP, user or session. A request over the limit answers
 * 429 with code 155 and `Retry-After`. The master key is not limited. Every request is counted
 * once: routed ones (batch members one by one, so a batch cannot get around a limit) by the
 * router, pages, downloads and uploads by the entry point (app.ts).
 */
export class RateLimiter {
  private readonly rules: Array<RateLimitRule & { pattern: RegExp }>;

  constructor(
    rules: readonly RateLimitRule[],
    private readonly store: RateLimitStore = new MemoryRateLimitStore(),
    private readonly now: () => number = Date.now,
  ) {
    this.rules = rules.map((rule) => ({ ...rule, pattern: new RegExp(rule.path) }));
  }

  /**
   * Counts the request against every rule that applies, in order; rejects with `RateLimited` at
   * the first one over its maximum (later rules are then not counted). Answers `undefined`, without
   * a promise, when no rule applies (the master key, or a route without a limit): only limited
   * routes wait for the store.
   */
  check(req: LimitedRequest): Promise<void> | undefined {
    if (req.ctx.caller.isMaster || this.rules.length === 0) return undefined;
    let pending: Promise<void> | undefined;
    let now: number | undefined;
    for (let i = 0; i < this.rules.length; i++) {
      const rule = this.rules[i]!;
      if (!applies(rule, req.method, req.path)) continue;
      const who = keyOf(rule.by, req.ctx);
      if (who === undefined) continue;
      now ??= this.now();
      const at = now;
      const key = `${i}:${who}`;
      pending = pending ? pending.then(() => this.count(rule, key, at)) : this.count(rule, key, at);
    }
    return pending;
  }

  /** Whether some rule names this method and (normal) path, whoever sends it. */
  names(method: string, path: string): boolean {
    return this.rules.some((rule) => applies(rule, method, path));
  }

  private async count(rule: RateLimitRule, key: string, now: number): Promise<void> {
    const { count, resetAt } = await this.store.hit(key, rule.window * 1000, now);
    if (count <= rule.max) return;
    const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000));
    throw new RateLimited(
      rule.error ??
        `Too many requests: at most ${rule.max} in ${rule.window} seconds. Retry in ${retryAfter} seconds.`,
      retryAfter,
    );
  }
}

function applies(rule: RateLimitRule & { pattern: RegExp }, method: string, path: string): boolean {
  return (!rule.methods || rule.methods.includes(method as never)) && rule.pattern.test(path);
}

function keyOf(by: RateLimitRule['by'], ctx: Ctx): string | undefined {
  switch (by) {
    case 'ip':
      return ctx.ip ? `ip:${ctx.ip}` : undefined;
    case 'user':
      return ctx.caller.user ? `user:${ctx.caller.user.objectId}` : ctx.ip ? `ip:${ctx.ip}` : undefined;
    case 'session':
      return ctx.caller.sessionToken
        ? `session:${ctx.caller.sessionToken}`
        : ctx.ip
          ? `ip:${ctx.ip}`
          : undefined;
  }
}

/** 429 with code 155; `retryAfter` (seconds) becomes the `Retry-After` header of a direct request. */
export class RateLimited extends BdsError {
  constructor(
    message: string,
    readonly retryAfter: number,
  ) {
    super(ErrorCode.REQUEST_LIMIT_EXCEEDED, message);
  }
}
