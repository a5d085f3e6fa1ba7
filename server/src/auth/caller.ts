import type { Data } from '../data/data.ts';
import { type Caller, makeCaller } from '../kernel/caller.ts';
import { type Clock, systemClock } from '../kernel/clock.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { WriteEvent } from '../kernel/events.ts';
import type { HeldRole } from '../storage/adapter.ts';

/** Upper bound of cached sessions and users; past it a cache starts over (it is only a cache). */
const MAX_CACHED = 10_000;

export const invalidSession = () => new BdsError(ErrorCode.INVALID_SESSION_TOKEN, 'Invalid session token');

/** When a `_Session` row (wire form) stops counting, in ms; a row without `expiresAt` never does. */
export function sessionRowExpiresAt(row: Readonly<Record<string, unknown>>): number {
  const iso = (row.expiresAt as { iso?: string } | undefined)?.iso;
  return iso ? Date.parse(iso) : Number.POSITIVE_INFINITY;
}

/**
 * The one rule of a session's validity, asked by REST (the resolver below) and realtime alike: a
 * session is live at `now` when it is known (not revoked or deleted: `undefined` otherwise) and has
 * not expired (`expiresAt` is the first instant at which it no longer counts).
 */
export function sessionIsLive(session: { readonly expiresAt: number } | undefined, now: number): boolean {
  return session !== undefined && session.expiresAt > now;
}

/** A live session's caller and the instant its session expires (Infinity: never). */
export interface ResolvedSession {
  caller: Caller;
  expiresAt: number;
}

interface CachedSession {
  userId: string;
  /** Milliseconds since the epoch; Infinity when the session has no expiry. */
  expiresAt: number;
  /** The caller this token makes (without an installation id), once built: the signed-in path reuses it. */
  caller?: Caller;
}

/**
 * Who is calling, resolved once per request before anything else runs: the master key, a user
 * with its roles (from a session token), or anonymous. Sessions and roles are cached; the caches
 * follow the write events (a `_Role` change drops every cached role set, a `_Session` change or
 * delete drops that token) and any rollback, so a revoked session or grant never outlives its row.
 */
export class CallerResolver {
  private sessions = new Map<string, CachedSession>();
  private roles = new Map<string, readonly HeldRole[]>();
  /** Bumped on every invalidation: an answer computed across one is not cached. */
  private generation = 0;

  constructor(
    private readonly data: Data,
    /** The service's time (tests inject one): the instant a session is checked at. */
    readonly clock: Clock = systemClock,
  ) {
    data.core.events.subscribe((event) => this.onWrite(event), { name: 'caller caches', phase: 'caches' });
    data.core.store.onRollback(async () => this.forgetAll());
  }

  private onWrite(event: WriteEvent): void {
    if (event.className === '_Role') {
      this.roles.clear();
      // Callers built with the old roles go too.
      for (const session of this.sessions.values()) session.caller = undefined;
      this.generation++;
    } else if (event.className === '_Session' && event.op !== 'create') {
      const token = event.before?.sessionToken;
      if (event.op === 'purge' || typeof token !== 'string') this.sessions.clear();
      else this.sessions.delete(token);
      this.generation++;
    }
  }

  forgetAll(): void {
    this.sessions.clear();
    this.roles.clear();
    this.generation++;
  }

  /**
   * The caller, at once when nothing needs looking up (the master key, no session token, a session
   * whose caller is cached), else once the session and roles are read.
   */
  resolve(init: {
    master: boolean;
    sessionToken?: string;
    installationId?: string | null;
  }): Caller | Promise<Caller> {
    const installationId = init.installationId ?? null;
    if (init.master) return makeCaller({ isMaster: true, installationId });
    if (init.sessionToken === undefined) return makeCaller({ installationId });
    const known = installationId === null ? this.sessions.get(init.sessionToken) : undefined;
    if (known?.caller && sessionIsLive(known, this.clock.now())) return known.caller;
    return this.resolveSession(init.sessionToken, installationId).then((live) => live.caller);
  }

  /**
   * The caller of a session token and when its session expires (realtime ends the token's
   * subscriptions then); 209 when the session is not live now.
   */
  async resolveSession(sessionToken: string, installationId: string | null = null): Promise<ResolvedSession> {
    const session = await this.session(sessionToken);
    if (!session || !sessionIsLive(session, this.clock.now())) throw invalidSession();
    const { expiresAt } = session;
    if (installationId === null && session.caller) return { caller: session.caller, expiresAt };
    const generation = this.generation;
    const caller = await this.forUser(session.userId, { sessionToken, installationId });
    if (installationId === null && generation === this.generation) session.caller = caller;
    return { caller, expiresAt };
  }

  /** A user as caller, with its roles (also for the service's own work on a user's behalf). */
  async forUser(
    userId: string,
    extra: { sessionToken?: string | null; installationId?: string | null } = {},
  ): Promise<Caller> {
    return makeCaller({ user: { objectId: userId }, roles: await this.rolesOf(userId), ...extra });
  }

  private async session(token: string): Promise<CachedSession | undefined> {
    const hit = this.sessions.get(token);
    if (hit) return hit;
    const generation = this.generation;
    const row = await this.data.lookups.sessionByToken(token);
    const userId = (row?.user as { objectId?: string } | undefined)?.objectId;
    if (!row || !userId) return undefined;
    const session = { userId, expiresAt: sessionRowExpiresAt(row) };
    if (generation === this.generation) {
      if (this.sessions.size >= MAX_CACHED) this.sessions.clear();
      this.sessions.set(token, session);
    }
    return session;
  }

  private async rolesOf(userId: string): Promise<readonly HeldRole[]> {
    const hit = this.roles.get(userId);
    if (hit) return hit;
    const generation = this.generation;
    const held = Object.freeze(await this.data.lookups.rolesOf(userId));
    // A change that landed while the query ran may not be in its answer: do not keep it then.
    if (generation === this.generation) {
      if (this.roles.size >= MAX_CACHED) this.roles.clear();
      this.roles.set(userId, held);
    }
    return held;
  }
}
