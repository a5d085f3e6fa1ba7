import { createHash } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../kernel/log.ts';

/**
 * The service's link to Redis (option `redisURL`), shared by everything several instances must
 * agree on: the event bus (redis/event-bus.ts), login throttles and lockout (users/lockout.ts), rate
 * limits (http/rate-limit.ts) and the scheduler's tick locks (jobs/scheduler.ts). Every key starts
 * with `prefix` (option `redis.keyPrefix`, by default `bds:<appId>:`), so applications (and test
 * runs) can share one Redis.
 *
 * `client` is for short commands: while it is not connected a command fails at once (no offline
 * queue), and one that gets no answer fails after 2 s, so that a caller falls back (rate limits and
 * lockout count in memory while Redis is away) rather than wait.
 * Blocking reads and the bus's publishing take their own connections (`connection`).
 */
export class RedisLink {
  readonly client: Redis;
  private readonly extra: Redis[] = [];
  private closed = false;
  private readonly warned = new Map<string, number>();

  constructor(
    private readonly url: string,
    readonly prefix: string,
    private readonly log: Logger,
  ) {
    this.client = this.connection('commands', { enableOfflineQueue: false, commandTimeout: 2000 });
  }

  /** A key under the prefix: `key('lock', id)` → `<prefix>lock:<id>`. */
  key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /**
   * A new connection (closed with the link). Its errors are logged once per outage, without the
   * url (it may carry a password); ioredis reconnects by itself.
   */
  connection(name: string, options: RedisOptions = {}): Redis {
    const redis = new Redis(this.url, {
      lazyConnect: true,
      protocol: 2,
      connectionName: `bds-${name}`,
      ...options,
    });
    let down = false;
    redis.on('error', (err: Error) => {
      if (down || this.closed) return;
      down = true;
      this.log.warn({ connection: name, err: err.message }, 'redis connection failed; retrying');
    });
    redis.on('ready', () => {
      if (down) this.log.info({ connection: name }, 'redis connection back');
      down = false;
    });
    if (name !== 'commands') this.extra.push(redis);
    return redis;
  }

  /**
   * A key for a value that must stay out of Redis's key space (a session token, a login name):
   * its SHA-256 under `kind`.
   */
  hashedKey(kind: string, value: string): string {
    return this.key(kind, createHash('sha256').update(value).digest('base64url'));
  }

  /**
   * `work` in Redis; while Redis does not answer, `alone` (this instance's memory), logged as
   * `unavailable` says. Rate limits and lockout are counted this way: a limit is never lifted,
   * only no longer shared.
   */
  async shared<T>(use: string, work: () => Promise<T>, alone: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      this.unavailable(use, err);
      return alone();
    }
  }

  /**
   * Logs (at most once a minute per use) that a use fell back to this instance's memory because
   * Redis did not answer.
   */
  unavailable(use: string, err: unknown): void {
    const now = Date.now();
    if ((this.warned.get(use) ?? 0) > now - 60_000) return;
    this.warned.set(use, now);
    this.log.warn(
      { use, err: err instanceof Error ? err.message : String(err) },
      'redis did not answer; this instance counts alone meanwhile',
    );
  }

  /** Connects the command connection: the service does not start while Redis does not answer. */
  async connect(): Promise<void> {
    let reason: string | undefined;
    const onError = (err: Error) => {
      reason ??= err.message;
    };
    this.client.on('error', onError);
    try {
      await this.client.connect();
    } catch (err) {
      // Without the url: it may carry a password.
      throw new Error(`Redis (option redisURL) does not answer: ${reason ?? (err as Error).message}`);
    } finally {
      this.client.off('error', onError);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const redis of [this.client, ...this.extra]) {
      try {
        if (redis.status === 'ready') await redis.quit();
        else redis.disconnect();
      } catch {
        redis.disconnect();
      }
    }
  }
}
