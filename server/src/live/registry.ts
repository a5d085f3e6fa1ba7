/**
 * Where active subscriptions are found, and what keeps them current: by class (ClassSubscriptions:
 * in order, by indexed key, counted by caller) and by session token; the caller generation that a
 * `_Role` or `_Session` write bumps; a subscription's caller resolved again and its query compiled
 * again when its caller or its class's schema moved (an end with its code when it no longer holds);
 * and the sessions' expiry (a timer at the earliest one, the rule REST asks: `sessionIsLive`).
 */
import { LiveCode, LiveText } from '@bds/client/protocol';
import { type CallerResolver, sessionIsLive } from '../auth/caller.ts';
import type { Caller } from '../kernel/caller.ts';
import type { Clock } from '../kernel/clock.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { SCHEMA_EVENT_CLASS, type WriteEvent } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { ClassSubscriptions } from './class-index.ts';
import type { Connections } from './connections.ts';
import { errorFrame, FrameError } from './frames.ts';
import type { CompiledSubscription, Subscription } from './model.ts';
import type { SubscriptionCheck } from './prepare.ts';
import type { TaskQueue } from './queue.ts';

/** The longest delay a timer takes (Node's limit is 2^31 - 1 ms); a later expiry is reached in steps. */
const MAX_TIMER_MS = 24 * 60 * 60 * 1000;

export class SubscriptionRegistry {
  private readonly byClass = new Map<string, ClassSubscriptions<Subscription, Caller>>();
  private readonly byToken = new Map<string, Set<Subscription>>();
  /** When the session of each token in `byToken` expires, as the caller resolver last answered (finite only). */
  private readonly expiries = new Map<string, number>();
  /** The earliest of `expiries`, or earlier (one may have gone since); Infinity when none. */
  private nextExpiry = Number.POSITIVE_INFINITY;
  private expiryTimer: unknown;
  private expiryTimerAt = Number.POSITIVE_INFINITY;
  private stopped = false;
  /**
   * Bumped by `_Role` and `_Session` changes (followWrite): subscriptions resolve their caller again
   * before the next event. Read by the fan-out; nothing else writes it.
   */
  generation = 0;

  constructor(
    private readonly schemas: SchemaRegistry,
    private readonly check: SubscriptionCheck,
    private readonly clients: Connections,
    private readonly callers: CallerResolver,
    /** The time sessions expire by (the resolver's, so REST and realtime agree on the instant). */
    private readonly clock: Clock,
    private readonly queue: TaskQueue,
    private readonly log: Logger,
  ) {}

  /** The subscriptions of a class, in the order they subscribed; undefined when it has none. */
  subscriptionsOf(className: string): ClassSubscriptions<Subscription, Caller> | undefined {
    return this.byClass.get(className);
  }

  /** Classes and tokens with subscriptions (LiveQuery.sizes). */
  get classes(): number {
    return this.byClass.size;
  }

  get tokens(): number {
    return this.byToken.size;
  }

  /**
   * What a write changes for the subscriptions themselves, in publish order: a schema change of a
   * class with subscriptions rechecks them (a CLP change may hide a field one names: at once, not at
   * the next event), a role or session change makes every caller stale, and a deleted session ends
   * the subscriptions that used its token.
   */
  followWrite(event: WriteEvent): void {
    if (
      event.className === SCHEMA_EVENT_CLASS &&
      typeof event.objectId === 'string' &&
      this.byClass.has(event.objectId)
    ) {
      const className = event.objectId;
      this.queue.enqueue(() => this.recheckClass(className));
    }
    if (event.className === '_Role') this.generation++;
    if (event.className === '_Session' && event.op !== 'create') {
      this.generation++;
      const token = event.before?.sessionToken;
      if (event.op === 'delete' && typeof token === 'string') {
        this.queue.enqueue(() => this.endSessionSubscriptions(token));
      }
    }
  }

  register(sub: Subscription): void {
    const compiled = sub.compiled!;
    const className = compiled.request.className;
    let set = this.byClass.get(className);
    if (!set) {
      set = new ClassSubscriptions();
      this.byClass.set(className, set);
    }
    set.add(sub, compiled.index, groupOf(compiled));
    // A subscription registered stale (its caller or schema moved while it was prepared) must be
    // refreshed by the next event: that one is decided in full.
    if (sub.generation !== this.generation || compiled.schema !== this.schemas.get(className)) {
      set.freshAt = null;
    }
    if (sub.token) {
      let tokens = this.byToken.get(sub.token);
      if (!tokens) {
        tokens = new Set();
        this.byToken.set(sub.token, tokens);
      }
      tokens.add(sub);
      this.rememberExpiry(sub.token, compiled.expiresAt);
    }
  }

  unregister(sub: Subscription): void {
    if (!sub.compiled) return;
    const className = sub.compiled.request.className;
    const set = this.byClass.get(className);
    if (set) {
      set.delete(sub);
      if (set.size === 0) this.byClass.delete(className);
    }
    if (sub.token) {
      const tokens = this.byToken.get(sub.token);
      if (tokens) {
        tokens.delete(sub);
        if (tokens.size === 0) {
          this.byToken.delete(sub.token);
          this.expiries.delete(sub.token);
        }
      }
    }
  }

  /** Ends a subscription without a word (unsubscribed, or its connection closed): it leaves everything. */
  endQuietly(sub: Subscription): void {
    if (sub.ended) return;
    sub.ended = true;
    sub.active = false;
    this.unregister(sub);
    if (sub.conn.subs.get(sub.requestId) === sub) sub.conn.subs.delete(sub.requestId);
    sub.compiled = undefined;
  }

  /** Ends a subscription with an error frame that says why (its session ended, its query no longer holds). */
  endWithError(sub: Subscription, code: number, text: string): void {
    if (sub.ended) return;
    const { conn, requestId } = sub;
    this.endQuietly(sub);
    this.clients.sendError(conn, errorFrame(code, text, requestId));
  }

  /** Whether the current caller and matchers of a subscription still hold (nothing moved since they were made). */
  isCurrent(sub: Subscription, compiled: CompiledSubscription): boolean {
    return (
      sub.generation === this.generation && compiled.schema === this.schemas.get(compiled.request.className)
    );
  }

  /**
   * Resolves the caller again after a role or session change (and compiles the subscription again
   * when the caller moved); ends the subscription when it no longer holds. Answers whether it lives.
   */
  async refreshCaller(sub: Subscription): Promise<boolean> {
    if (sub.generation === this.generation || !sub.compiled) return !sub.ended;
    const generation = this.generation;
    const compiled = sub.compiled;
    if (sub.conn.master) {
      sub.generation = generation;
      return true;
    }
    try {
      const session = await this.check.resolveCaller(sub.conn, sub.token, sub.requestId);
      if (sub.ended || sub.compiled !== compiled) return !sub.ended;
      if (session.caller !== compiled.caller) {
        this.replaceCompiled(sub, await this.check.compile(compiled, session));
      } else compiled.expiresAt = session.expiresAt;
      if (sub.token && !sub.ended) this.rememberExpiry(sub.token, session.expiresAt);
      sub.generation = generation;
      return !sub.ended;
    } catch (err) {
      if (err instanceof FrameError)
        this.endWithError(
          sub,
          err.code,
          err.code === LiveCode.INVALID_SESSION ? LiveText.sessionEnded : err.message,
        );
      else throw err;
      return false;
    }
  }

  /** The matchers of a subscription for the class's current schema (a schema change compiles them again). */
  async compiledForCurrentSchema(sub: Subscription): Promise<CompiledSubscription | undefined> {
    const compiled = sub.compiled;
    if (!compiled) return undefined;
    if (this.schemas.get(compiled.request.className) === compiled.schema) return compiled;
    try {
      this.replaceCompiled(sub, await this.check.compile(compiled, compiled));
      return sub.compiled;
    } catch (err) {
      if (err instanceof FrameError) this.endWithError(sub, err.code, err.message);
      else throw err;
      return undefined;
    }
  }

  /** Whether a session may have expired since the last check (its subscriptions end before the next event). */
  get sessionsMayBeDue(): boolean {
    return (
      this.nextExpiry !== Number.POSITIVE_INFINITY &&
      !sessionIsLive({ expiresAt: this.nextExpiry }, this.clock.now())
    );
  }

  /**
   * Ends, as a logout does (209), the subscriptions of every session that is no longer live by the
   * service's clock (the rule REST asks, `sessionIsLive`). A session that seems due is asked of the
   * caller resolver first: one whose expiry was moved later lives on with its new expiry.
   */
  async expireSessions(): Promise<void> {
    const now = this.clock.now();
    const due = [...this.expiries].filter(([, expiresAt]) => !sessionIsLive({ expiresAt }, now));
    for (const [token] of due) {
      try {
        const { expiresAt } = await this.callers.resolveSession(token);
        if (this.expiries.has(token)) this.rememberExpiry(token, expiresAt);
      } catch (err) {
        if (err instanceof BdsError && err.code === ErrorCode.INVALID_SESSION_TOKEN) {
          this.endSessionSubscriptions(token);
        } else
          this.log.error(
            { err: err instanceof Error ? err.message : String(err) },
            'realtime session check failed',
          );
      }
    }
    let next = Number.POSITIVE_INFINITY;
    for (const expiresAt of this.expiries.values()) if (expiresAt < next) next = expiresAt;
    this.nextExpiry = next;
    this.armExpiryTimer();
  }

  /** At shutdown: the expiry timer is cleared and never set again. */
  stop(): void {
    this.stopped = true;
    if (this.expiryTimer !== undefined) this.clock.clearTimeout(this.expiryTimer);
  }

  /** Replaces what a subscription holds (its caller or the schema changed), moving it in the index. */
  private replaceCompiled(sub: Subscription, compiled: CompiledSubscription): void {
    sub.compiled = compiled;
    if (sub.ended) return;
    const set = this.byClass.get(compiled.request.className);
    if (set?.all.has(sub)) set.reindex(sub, compiled.index, groupOf(compiled));
  }

  /** The subscriptions of a session that ended (logout, revoked, expired) end with 209. */
  private endSessionSubscriptions(token: string): void {
    const subs = this.byToken.get(token);
    if (!subs) return;
    for (const sub of [...subs]) this.endWithError(sub, LiveCode.INVALID_SESSION, LiveText.sessionEnded);
  }

  /** Remembers when a token's session expires, and wakes the expiry timer sooner when needed. */
  private rememberExpiry(token: string, expiresAt: number): void {
    if (expiresAt === Number.POSITIVE_INFINITY) this.expiries.delete(token);
    else this.expiries.set(token, expiresAt);
    if (expiresAt < this.nextExpiry) {
      this.nextExpiry = expiresAt;
      this.armExpiryTimer();
    }
  }

  /** A timer at the earliest expiry, so a session ends on time even when no event comes. */
  private armExpiryTimer(): void {
    const at = this.nextExpiry;
    if (at === this.expiryTimerAt) return;
    if (this.expiryTimer !== undefined) this.clock.clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    this.expiryTimerAt = Number.POSITIVE_INFINITY;
    if (at === Number.POSITIVE_INFINITY || this.stopped) return;
    this.expiryTimerAt = at;
    this.expiryTimer = this.clock.setTimeout(
      () => {
        this.expiryTimer = undefined;
        this.expiryTimerAt = Number.POSITIVE_INFINITY;
        this.queue.enqueue(() => this.expireSessions());
      },
      Math.min(Math.max(0, at - this.clock.now()), MAX_TIMER_MS),
    );
  }

  /** After a schema change of a class: each of its subscriptions checked again for its caller (4 ends one that no longer holds). */
  private async recheckClass(className: string): Promise<void> {
    const subs = this.byClass.get(className);
    if (!subs) return;
    for (const sub of [...subs.all]) {
      if (!sub.active || sub.ended) continue;
      try {
        if (await this.refreshCaller(sub)) await this.compiledForCurrentSchema(sub);
      } catch (err) {
        this.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'realtime delivery failed');
      }
    }
  }
}

/** The group of a plain subscription (no CLP row condition): its caller; null for a special one. */
function groupOf(compiled: CompiledSubscription): Caller | null {
  return compiled.clpMatcher ? null : compiled.caller;
}
